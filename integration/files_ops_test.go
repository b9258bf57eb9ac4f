package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// filesOpsSeeds and filesOpsSteps size TestFilesRandomOps: sequences of
// operations, and operations in each.
const (
	filesOpsSeeds = 24
	filesOpsSteps = 600
)

// TestFilesRandomOps runs testdata/files_ops.py, a separate Python
// process, for filesOpsSeeds sequences of random file operations (mkdir,
// rmdir, writes whole, O_EXCL, O_TRUNC and tmp + rename, appends,
// renames of files and directories, unlinks, truncates, reads, listings,
// stats, descriptors kept open) on a files model and on a plain
// directory, each operation's result compared, and the trees every 25
// operations. Then the daemon stops (SIGTERM keeps everything) and
// starts again over its tier, and every file is there as in the plain
// directory. It found eight faults that the tests written for each call
// had not (docs/design.md, *Random operations against a plain
// directory*).
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
	for seed := range filesOpsSeeds {
		name := strconv.Itoa(seed)
		a, b := filepath.Join(model, name), filepath.Join(plain, name)
		for _, dir := range []string{a, b} {
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		out, err := exec.Command("python3", script, name, strconv.Itoa(filesOpsSteps), a, b).CombinedOutput()
		if err != nil {
			t.Errorf("sequence %d: %v: %s", seed, err, out)
		}
	}
	want := engineTree(t, plain)
	sameTree(t, "the files model", engineTree(t, model), want)
	if code := d.stop(); code != 0 {
		t.Fatalf("ucmfs exited %d\n%s", code, d.out.String())
	}
	d = mountUCM(t, mountOpts{Mnt: mnt, Tier: tier})
	sameTree(t, "the files model after a restart", engineTree(t, model), want)
}
