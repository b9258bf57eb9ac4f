package integration

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ucmfs/ucmfs/internal/faultfs"
	"golang.org/x/sys/unix"
)

// fsyncVerdict writes data to path, fsyncs and closes it, and returns the
// first error.
func fsyncVerdict(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o444)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}

// smallFS mounts a tmpfs of size bytes for a tier; it is unmounted after
// the test.
func smallFS(t *testing.T, size string) string {
	t.Helper()
	dir := filepath.Join(testDir(t), "small")
	os.Mkdir(dir, 0o755)
	if err := unix.Mount("ucmit", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Skipf("tmpfs: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	return dir
}

// TestFullTier: an nvme tier on an 8 MiB filesystem that claims 1 GiB.
// 100 blocks of 512 KiB, each fsynced: the tier makes room by dropping its
// least recently used blocks, so every fsync succeeds; and whatever the
// verdict, a block is visible exactly when its fsync succeeded.
func TestFullTier(t *testing.T) {
	tier := smallFS(t, "8m")
	d := mountUCM(t, mountOpts{Bare: true, Args: []string{"--memory", "4MiB", "--memory-dir", memDir,
		"--log-level", "warn", "--tier", "nvme:" + tier + ":1GiB"}})
	os.Mkdir(d.path("m"), 0o755)
	failed := 0
	for i, id := range testIDs("full-tier", 100) {
		os.Mkdir(d.path("m", id[:2]), 0o755)
		p := blockPath(d.Mnt, "m", id)
		err := fsyncVerdict(p, bigBlock(id, 512<<10))
		_, serr := os.Stat(p)
		switch {
		case err != nil && serr == nil:
			t.Errorf("block %d: fsync failed (%v) but the block is visible", i, err)
		case err == nil && serr != nil:
			t.Errorf("block %d: fsync succeeded but stat: %v", i, serr)
		}
		if err != nil {
			failed++
			if retry := fsyncVerdict(p, bigBlock(id, 512<<10)); errors.Is(retry, syscall.EEXIST) {
				t.Errorf("block %d: the retry after a failed fsync got EEXIST", i)
			}
		}
	}
	if failed > 0 {
		t.Errorf("%d of 100 fsyncs failed on a full tier that can drop old blocks", failed)
	}
}

// TestReadOnlyTier: the tier's filesystem turns read-only under the
// daemon. A durable write fails at once with EROFS (not after a wait, not
// ENOSPC) and leaves nothing visible; the tier is reported down; once the
// filesystem is writable again the probe brings it back and writes work.
func TestReadOnlyTier(t *testing.T) {
	ffs := faultfs.Mount(t, t.TempDir())
	d := mountUCM(t, mountOpts{Tier: ffs.Dir()})
	os.Mkdir(d.path("m"), 0o755)
	ids := testIDs("ro-tier", 3)
	for _, id := range ids {
		os.Mkdir(d.path("m", id[:2]), 0o755)
	}
	if err := fsyncVerdict(blockPath(d.Mnt, "m", ids[0]), goodBlock(ids[0])); err != nil {
		t.Fatal(err)
	}
	// What a read-only remount answers to everything that writes.
	for _, op := range []faultfs.Op{faultfs.OpCreate, faultfs.OpMkdir, faultfs.OpWrite, faultfs.OpRename,
		faultfs.OpSetxattr, faultfs.OpSetattr, faultfs.OpUnlink, faultfs.OpFsync} {
		ffs.Inject(faultfs.Fault{Op: op, Errno: syscall.EROFS})
	}
	start := time.Now()
	err := fsyncVerdict(blockPath(d.Mnt, "m", ids[1]), goodBlock(ids[1]))
	if !errors.Is(err, syscall.EROFS) {
		t.Errorf("fsync onto a read-only tier: %v, want EROFS", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the refusal took %v", took)
	}
	if _, err := os.Stat(blockPath(d.Mnt, "m", ids[1])); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a block whose fsync failed is visible: %v", err)
	}
	raw, _ := os.ReadFile(d.path(".ucm", "stats"))
	if !strings.Contains(string(raw), `"down"`) {
		t.Errorf("the tier is not reported down:\n%s", raw)
	}
	// A second durable write fails fast too (the tier is down: EROFS).
	if err := fsyncVerdict(blockPath(d.Mnt, "m", ids[1]), goodBlock(ids[1])); !errors.Is(err, syscall.EROFS) {
		t.Errorf("the retry on a down tier: %v, want EROFS", err)
	}
	ffs.Clear()
	waitUntil(t, "a durable write after the tier came back", func() bool {
		return fsyncVerdict(blockPath(d.Mnt, "m", ids[2]), goodBlock(ids[2])) == nil
	})
	if got, err := os.ReadFile(blockPath(d.Mnt, "m", ids[0])); err != nil || string(got) != string(goodBlock(ids[0])) {
		t.Errorf("the block written before: %v", err)
	}
	if code := d.stop(); code != 0 {
		t.Errorf("exit %d", code)
	}
}
