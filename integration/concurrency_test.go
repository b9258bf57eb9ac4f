package integration

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
)

// TestConcurrentProcesses runs 16 client processes at once against one
// mount: 8 writers that all race to publish the same ids (and each a few
// of their own), and 8 readers of blocks published before. Every process
// succeeds (racing writers of one id both get close() == 0, or EEXIST at
// open), every block reads back intact, and each id is listed once.
func TestConcurrentProcesses(t *testing.T) {
	requireTool(t, "python3")
	d := mountUCM(t, mountOpts{})
	os.Mkdir(d.path("m"), 0o755)
	old := testIDs("conc-old", 32)
	mustPy(t, append([]string{"put", d.Mnt, "m", "--seed", "3"}, old...)...)
	shared := testIDs("conc-shared", 8)

	type run struct {
		name string
		args []string
	}
	var runs []run
	var own [][]string
	for w := range 8 {
		mine := testIDs(fmt.Sprintf("conc-own-%d", w), 4)
		own = append(own, mine)
		// Each writer starts at a different shared id, so the races are
		// spread over the whole set rather than always on the first id.
		ids := slices.Concat(shared[w%len(shared):], shared[:w%len(shared)], mine)
		runs = append(runs, run{fmt.Sprintf("writer %d", w), append([]string{"put", d.Mnt, "m", "--seed", "3"}, ids...)})
	}
	for r := range 8 {
		ids := slices.Clone(old)
		slices.Reverse(ids[r*4:])
		runs = append(runs, run{fmt.Sprintf("reader %d", r), append([]string{"verify", d.Mnt, "m", "--seed", "3"}, ids...)})
	}

	var wg sync.WaitGroup
	results := make([]pyResult, len(runs))
	start := make(chan struct{})
	for i, r := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			results[i] = runPy(r.args...)
		}()
	}
	close(start)
	wg.Wait()
	for i, r := range results {
		if r.Code != 0 {
			t.Errorf("%s: exit %d\n%s%s", runs[i].name, r.Code, r.Out, r.Err)
		}
	}
	for _, id := range shared {
		published := 0
		for i := range 8 {
			if strings.Contains(results[i].Out, "published "+id) {
				published++
			}
		}
		if published == 0 {
			t.Errorf("shared id %s: no writer saw it published", id)
		}
	}

	all := slices.Concat(old, shared, slices.Concat(own...))
	mustPy(t, append([]string{"verify", d.Mnt, "m", "--seed", "3"}, all...)...)
	listed := listBlocks(t, d.Mnt, "m")
	slices.Sort(listed)
	slices.Sort(all)
	if !slices.Equal(listed, all) {
		t.Errorf("readdir lists %d blocks, want exactly the %d written once each", len(listed), len(all))
	}
	if _, err := os.ReadFile(d.path(".ucm", "stats")); err != nil || !d.alive() {
		t.Errorf("daemon not serving after the race: %v", err)
	}
}

// pythonEnv is the environment of a client process: the package from
// the tree, and no __pycache__ written into it.
func pythonEnv() []string {
	return append(os.Environ(), "PYTHONPATH="+pythonDir, "PYTHONDONTWRITEBYTECODE=1")
}

// runPy runs the client without a *testing.T (for goroutines).
func runPy(args ...string) pyResult {
	cmd := exec.Command("python3", append([]string{"-m", "ucmfs"}, args...)...)
	cmd.Env = pythonEnv()
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	code := 0
	if err := cmd.Run(); err != nil {
		code = -1
		if cmd.ProcessState != nil {
			code = cmd.ProcessState.ExitCode()
		}
		errb.WriteString(err.Error())
	}
	return pyResult{Out: out.String(), Err: errb.String(), Code: code}
}
