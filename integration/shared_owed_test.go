package integration

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/ucmfs/ucmfs/internal/faultfs"
)

// TestSharedOwedAfterKill: a block published on a host while its shared
// tier is down is written back to the host's nvme and owed to the share;
// the daemon is killed (-9) before the share is back, and started again
// on the same nvme once it is: the block reaches the share. (The files
// owed were a set in memory only: the restarted daemon kept the block on
// its nvme, and no other host ever found it.)
func TestSharedOwedAfterKill(t *testing.T) {
	share := sharedDir(t)
	ffs := faultfs.Mount(t, share)
	nvme := filepath.Join(testDir(t), "nvme")
	if err := os.Mkdir(nvme, 0o755); err != nil {
		t.Fatal(err)
	}
	opts := func() mountOpts {
		return mountOpts{Bare: true, Args: []string{"--memory", "64MiB", "--memory-dir", memDir, "--log-level", "info",
			"--tier", "nvme:" + nvme, "--tier", "nfs:" + ffs.Dir(), "--negative-ttl", sharedTTL.String()}}
	}
	a := mountUCM(t, opts())
	const model = "owed"
	if err := os.Mkdir(a.path(model), 0o755); err != nil {
		t.Fatal(err)
	}
	id := testIDs(model, 1)[0]
	if err := os.Mkdir(filepath.Join(share, model, id[:2]), 0o755); err != nil && !os.IsExist(err) {
		t.Fatal(err)
	}

	ffs.Inject(faultfs.Fault{Op: faultfs.OpAny, Errno: syscall.ENOTCONN}) // the share's client gone
	if err := writeVerdict(blockPath(a.Mnt, model, id), goodBlock(id)); err != nil {
		t.Fatal(err)
	}
	if err := flushErr(a); err == nil {
		t.Fatal("flush answered ok flushed while the share is down")
	}
	until(t, "the block written back to the nvme", func() bool {
		_, err := os.Stat(blockPath(nvme, model, id))
		return err == nil
	})
	a.kill()
	a.detach()

	ffs.Clear()
	b := mountUCM(t, opts())
	until(t, "the block owed before the kill on the share", func() bool {
		got, err := os.ReadFile(blockPath(share, model, id))
		return err == nil && string(got) == string(goodBlock(id))
	})
	readsExact(t, b, model, []string{id})
}
