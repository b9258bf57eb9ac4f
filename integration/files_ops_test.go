package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
)

// filesOpsSeeds, filesOpsSteps and filesOpsAtOnce size TestFilesRandomOps:
// sequences of operations, operations in each, and sequences run at once.
const (
	filesOpsSeeds  = 24
	filesOpsSteps  = 600
	filesOpsAtOnce = 4
)

// TestFilesRandomOps runs testdata/files_ops.py, a separate Python
// process, for filesOpsSeeds sequences of random file operations (mkdir,
// rmdir, writes whole, O_EXCL, O_TRUNC and tmp + rename, appends,
// renames of files and directories, unlinks, truncates, reads, listings,
// stats, descriptors kept open, written descriptors closed with a
// duplicate left open) on a files model and on a plain directory, each
// operation's result compared, and the trees every 25 operations;
// filesOpsAtOnce sequences run at once, each in a directory of its own,
// so that the daemon serves them together (a release then comes late).
// Then the daemon stops (SIGTERM keeps everything) and starts again over
// its tier, and every file is there as in the plain directory. It found
// twelve faults that the tests written for each call had not
// (docs/design.md, *Random operations against a plain directory* and
// *A close's release comes late*).
func TestFilesRandomOps(t *testing.T) {
	requireTool(t, "python3")
	script, err := filepath.Abs(filepath.Join("testdata", "files_ops.py"))
	if err != nil {
		t.Fatal(err)
	}
	d, mnt, tier := filesMount(t)
	model := filepath.Join(mnt, "eng")
	plain := filepath.Join(testDir(t), "plain")
	for _, dir := range []string{model, plain} {
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	slots := make(chan struct{}, filesOpsAtOnce)
	for seed := range filesOpsSeeds {
		name := strconv.Itoa(seed)
		a, b := filepath.Join(model, name), filepath.Join(plain, name)
		for _, dir := range []string{a, b} {
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			out, err := exec.Command("python3", script, name, strconv.Itoa(filesOpsSteps), a, b).CombinedOutput()
			if err != nil {
				t.Errorf("sequence %d: %v: %s", seed, err, out)
			}
		})
	}
	wg.Wait()
	want := engineTree(t, plain)
	sameTree(t, "the files model", engineTree(t, model), want)
	if code := d.stop(); code != 0 {
		t.Fatalf("ucmfs exited %d\n%s", code, d.out.String())
	}
	d = mountUCM(t, mountOpts{Mnt: mnt, Tier: tier})
	sameTree(t, "the files model after a restart", engineTree(t, model), want)
}
