package integration

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ucmfs/ucmfs/internal/faultfs"
)

// tierBlocks is the block count .ucm/stats shows for tier i.
func tierBlocks(t *testing.T, d *daemon, i int) int {
	t.Helper()
	ts, _ := statsOf(t, d)["tiers"].([]any)
	if i >= len(ts) {
		t.Fatalf("stats: no tier %d", i)
	}
	n, _ := ts[i].(map[string]any)["blocks"].(float64)
	return int(n)
}

// TestSharedRestartReady: with 10^5 blocks (UCMFS_SHARED_BLOCKS to
// change it) in the shared directory (seen through internal/faultfs with
// every operation UCMFS_SHARED_LATENCY late, when set), a daemon is ready
// at once and serves them while its index builds in the background; the
// same directory as an nvme tier (a full rebuild before serving) is the
// baseline. The figures are logged, not asserted.
func TestSharedRestartReady(t *testing.T) {
	n := 100000
	if s := os.Getenv("UCMFS_SHARED_BLOCKS"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	dir := sharedDir(t)
	ids := testIDs("restart", n)
	makeShards(t, dir, "m", ids)
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < n; i += 4 {
				if err := os.WriteFile(blockPath(dir, "m", ids[i]), bigBlock(ids[i], 16), 0o444); err != nil {
					t.Error(err)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	share, fail := dir, t.Errorf
	if lat, err := time.ParseDuration(os.Getenv("UCMFS_SHARED_LATENCY")); err == nil && lat > 0 {
		ffs := faultfs.Mount(t, dir) // every operation on the share that much late
		ffs.Inject(faultfs.Fault{Op: faultfs.OpAny, Delay: lat})
		share = ffs.Dir()
		// A figure only: go-fuse's loopback, path-based, answers a few
		// lookups ENOENT under many concurrent listings.
		fail = t.Logf
		t.Logf("the share answers every operation %v late", lat)
	}

	start := time.Now()
	d := mountUCM(t, sharedMount("nfs:"+share, "--log-level", "info"))
	ready := time.Since(start)
	start = time.Now()
	for i := 0; i < 100; i++ {
		id := ids[i*n/100+n/200]
		got, err := os.ReadFile(blockPath(d.Mnt, "m", id))
		if err != nil || !bytes.Equal(got, bigBlock(id, 16)) {
			fail("read %s right after the start: %v", id, err)
		}
	}
	served := time.Since(start)
	scan := until(t, "the background scan", func() bool {
		return strings.Contains(d.out.String(), "shared tier index built in the background")
	})
	if got := tierBlocks(t, d, 1); got != n {
		fail("the background scan found %d blocks, want %d", got, n)
	}
	if code := d.stop(); code != 0 {
		t.Fatalf("stop: exit %d", code)
	}

	start = time.Now()
	local := mountUCM(t, mountOpts{Bare: true, Args: []string{"--memory", "64MiB", "--memory-dir", memDir,
		"--log-level", "warn", "--tier", "nvme:" + share}})
	nvmeReady := time.Since(start)
	if got := tierBlocks(t, local, 1); got != n {
		fail("the nvme rebuild found %d blocks, want %d", got, n)

	}
	t.Logf("%d blocks: shared tier ready in %v, 100 blocks read in %v, background index built %v after those reads; "+
		"the same directory as an nvme tier (full rebuild) ready in %v",
		n, ready.Round(time.Millisecond), served.Round(time.Millisecond), (scan + served).Round(time.Millisecond),
		nvmeReady.Round(time.Millisecond))
}

// TestSharedCrashLeftovers: temp files a crashed daemon left on the share
// (one of a dead process of this host, one of another host, old) make
// fsck exit 4; a daemon over the share removes both, and a young temp
// file of another host (a write in flight) stays.
func TestSharedCrashLeftovers(t *testing.T) {
	dir := sharedDir(t)
	id := testIDs("leftovers", 1)[0]
	plantBlocks(t, dir, "m", []string{id})
	host, _ := os.Hostname()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	shard := filepath.Join(dir, "m", id[:2])
	mine := filepath.Join(shard, ".tmp-"+host+"@"+strconv.Itoa(dead.Process.Pid)+"-"+id+"-1")
	old := filepath.Join(shard, ".tmp-otherhost@7-"+id+"-2")
	young := filepath.Join(shard, ".tmp-otherhost@8-"+id+"-3")
	for _, p := range []string{mine, old, young} {
		if err := os.WriteFile(p, []byte("half a block"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	past := time.Now().Add(-time.Hour)
	os.Chtimes(old, past, past)
	if out, err := exec.Command(ucmfsBin, "fsck", dir).CombinedOutput(); exitCode(err) != 4 {
		t.Fatalf("fsck with leftovers: %v, want exit 4\n%s", err, out)
	}
	sharedDaemon(t, dir)
	until(t, "the daemon removes the crash's leftovers", func() bool {
		_, e1 := os.Stat(mine)
		_, e2 := os.Stat(old)
		return errors.Is(e1, os.ErrNotExist) && errors.Is(e2, os.ErrNotExist)
	})
	if _, err := os.Stat(young); err != nil {
		t.Errorf("a young temp file of another host was removed: %v", err)
	}
}

// exitCode is a command's exit status from its error (0 for nil).
func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}
