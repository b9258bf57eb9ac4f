package integration

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ucmfs/ucmfs/internal/engineproto"
	"golang.org/x/sys/unix"
)

// mountFilesModel mounts ucmfs over a fresh mount point and nvme tier
// directory of the test's own and makes the files model "m"; it returns
// the daemon and the model's directory on the mount.
func mountFilesModel(t *testing.T) (*daemon, string) {
	t.Helper()
	dir := testDir(t)
	mnt := filepath.Join(dir, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	d := mountUCM(t, mountOpts{Mnt: mnt, Tier: filepath.Join(dir, "tier")})
	root := d.path("m")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	sh(t, "setfattr", "-n", "user.ucm.layout", "-v", "files", root)
	return d, root
}

// TestFilesDirectStaging: a file of a files model created O_DIRECT (vLLM's
// fs tier) is staged on the nvme tier and published there by its rename:
// the tier holds it at once, without a page of it in the page cache and
// without a flush, and it loads whole; the promotion its first read
// queues computes its CRC, which the tier file keeps from then on. An unaligned O_DIRECT write is
// EINVAL as on the plain directory. A published file that its writer
// writes again through a descriptor kept past the close that published it
// is removed, not trusted. After kill -9 with O_DIRECT staging files half written, every
// published file is there and whole, and no staging file is left in the
// tree or the tier.
func TestFilesDirectStaging(t *testing.T) {
	requireTool(t, "fincore")
	d, root := mountFilesModel(t)
	mnt, tier := d.Mnt, d.Tier
	dir := filepath.Dir(mnt)
	v := &engineproto.VLLM{Root: root, Salt: "direct", Model: "m", Direct: true}
	if err := v.Setup(); err != nil {
		t.Fatal(err)
	}
	const blocks = 4
	before := statsOf(t, d)["direct_writes"].(float64)
	for i := range blocks {
		if err := v.Store(i, engineData("direct", i)); err != nil {
			t.Fatal(err)
		}
	}
	if got := statsOf(t, d)["direct_writes"].(float64) - before; got != blocks {
		t.Errorf("direct_writes went up by %v, want %d (one per file staged on the nvme tier)", got, blocks)
	}
	for i := range blocks {
		rel, err := filepath.Rel(root, v.Path(i))
		if err != nil {
			t.Fatal(err)
		}
		tierFile := filepath.Join(tier, "m", rel)
		res, err := strconv.ParseInt(strings.TrimSpace(sh(t, "fincore", "--bytes", "--noheadings", "--output", "RES", tierFile)), 10, 64)
		if err != nil {
			t.Fatalf("block %d is not on the nvme tier after its rename: %v", i, err)
		}
		if res != 0 {
			t.Errorf("block %d: %d bytes of the tier file in the page cache after an O_DIRECT write, want none", i, res)
		}
		if _, err := unix.Getxattr(tierFile, "user.ucm.crc32c", make([]byte, 16)); !errors.Is(err, unix.ENODATA) {
			t.Errorf("block %d: a CRC kept before any read of the file (%v): its bytes never passed through the daemon", i, err)
		}
		if got, err := v.Load(i, engineBlock); err != nil || !bytes.Equal(got, engineData("direct", i)) {
			t.Fatalf("block %d does not load whole: %v", i, err)
		}
		waitUntil(t, "the CRC kept on the tier file by the promotion the first read queued", func() bool {
			_, err := unix.Getxattr(tierFile, "user.ucm.crc32c", make([]byte, 16))
			return err == nil
		})
	}

	// An unaligned O_DIRECT write: EINVAL, as on the plain directory.
	plain := filepath.Join(dir, "plain")
	if err := os.Mkdir(plain, 0o755); err != nil {
		t.Fatal(err)
	}
	buf, err := unix.Mmap(-1, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS) // page-aligned
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(buf)
	for _, p := range []string{filepath.Join(plain, "odd.tmp"), filepath.Join(root, "odd.tmp")} {
		fd, err := unix.Open(p, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_DIRECT, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		_, err = unix.Pwrite(fd, buf[:100], 0)
		unix.Close(fd)
		os.Remove(p)
		if !errors.Is(err, unix.EINVAL) {
			t.Errorf("%s: an unaligned O_DIRECT write returned %v, want EINVAL", p, err)
		}
	}

	// Written again through a descriptor kept past the close that
	// published it (a dup, as a forked child's): removed from the tier.
	late := filepath.Join(root, "late.bin")
	fd, err := unix.Open(late, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_DIRECT, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := unix.Write(fd, buf); err != nil {
		t.Fatal(err)
	}
	kept, err := unix.Dup(fd)
	if err != nil {
		t.Fatal(err)
	}
	unix.Close(fd) // publishes
	if _, err := os.Stat(filepath.Join(tier, "m", "late.bin")); err != nil {
		t.Fatalf("not on the nvme tier once published: %v", err)
	}
	if _, err := unix.Pwrite(kept, buf, 4096); err != nil {
		t.Fatal(err)
	}
	unix.Close(kept)
	waitUntil(t, "the file written after its publish removed from the tier", func() bool {
		_, err := os.Stat(filepath.Join(tier, "m", "late.bin"))
		return os.IsNotExist(err)
	})

	// kill -9 with O_DIRECT staging files open and half written.
	var open []int
	for k := range 3 {
		p := v.Path(100+k) + ".kill.tmp"
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		fd, err := unix.Open(p, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_DIRECT, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := unix.Write(fd, buf); err != nil {
			t.Fatal(err)
		}
		open = append(open, fd)
	}
	d.kill()
	d.detach()
	for _, fd := range open {
		unix.Close(fd)
	}
	d = mountUCM(t, mountOpts{Mnt: mnt, Tier: tier})
	for i := range blocks { // published, never flushed: on the tier since the rename
		if got, err := v.Load(i, engineBlock); err != nil || !bytes.Equal(got, engineData("direct", i)) {
			t.Fatalf("after kill -9: block %d does not load whole: %v", i, err)
		}
	}
	noStaging(t, root, 1)
	filepath.WalkDir(tier, func(p string, e os.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(e.Name(), ".tmp-") {
			t.Errorf("after kill -9 and the restart: staging file %s left in the tier", p)
		}
		return nil
	})
	if code := d.stop(); code != 0 {
		t.Fatalf("SIGTERM: exit %d", code)
	}
	if out, err := exec.Command(ucmfsBin, "fsck", tier).CombinedOutput(); err != nil {
		t.Errorf("ucmfs fsck of the tier: %v\n%s", err, out)
	}
}
