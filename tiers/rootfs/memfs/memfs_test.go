package memfs

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/ucmfs/ucmfs/tiers/rootfs"
	"golang.org/x/sys/unix"
)

const testDir = "/memfs/test"

// open makes a disk of capacity bytes and opens it.
func open(t *testing.T, capacity int64) (*Disk, rootfs.FS) {
	t.Helper()
	d, err := New(testDir, capacity)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	fsys, err := d.Open(testDir, 0o700)
	if err != nil {
		t.Fatal(err)
	}
	return d, fsys
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// nlink is the link count Stat gives rel.
func nlink(t *testing.T, fsys rootfs.FS, rel string) uint64 {
	t.Helper()
	var st unix.Stat_t
	must(t, fsys.Stat(rel, &st))
	return uint64(st.Nlink)
}

// TestDirectoryLinkCount: a directory's link count is 2 plus its
// subdirectories, as tmpfs counts, through mkdir, rename and rmdir.
func TestDirectoryLinkCount(t *testing.T) {
	_, fsys := open(t, 1<<20)
	must(t, fsys.MkdirAll("m/a", 0o755))
	must(t, fsys.Mkdir("m/b", 0o755))
	must(t, fsys.WriteFile("m/f", nil, 0o600))
	if n := nlink(t, fsys, "m"); n != 4 {
		t.Fatalf("m: %d links, want 4", n)
	}
	must(t, fsys.Rename("m/b", "b", 0))
	must(t, fsys.Rename("m/f", "m/a/f", 0))
	if n, root := nlink(t, fsys, "m"), nlink(t, fsys, "."); n != 3 || root != 4 {
		t.Fatalf("after the renames: m %d links, root %d; want 3 and 4", n, root)
	}
	must(t, fsys.Rename("b", "m/a", unix.RENAME_EXCHANGE)) // a directory each way: counts unchanged
	if n, root := nlink(t, fsys, "m"), nlink(t, fsys, "."); n != 3 || root != 4 {
		t.Fatalf("after the exchange: m %d links, root %d; want 3 and 4", n, root)
	}
	must(t, fsys.RemoveAll("m"))
	if n := nlink(t, fsys, "."); n != 3 {
		t.Fatalf("root: %d links, want 3", n)
	}
}

// TestWhatMemoryCannotGive: the package doc's list: no descriptor of a
// directory, no O_TMPFILE, no root descriptor (and the tiers' two uses
// of it take -1 as "no"), no link refused ever.
func TestWhatMemoryCannotGive(t *testing.T) {
	_, fsys := open(t, 1<<20)
	must(t, fsys.Mkdir("d", 0o755))
	for _, flag := range []int{unix.O_RDONLY, unix.O_RDONLY | unix.O_DIRECTORY, unix.O_PATH} {
		if fd, err := fsys.OpenFD("d", flag, 0); !errors.Is(err, unix.EISDIR) {
			unix.Close(fd)
			t.Errorf("open of a directory with %#x: %v, want EISDIR", flag, err)
		}
	}
	if _, err := fsys.OpenFD("d", unix.O_TMPFILE|unix.O_RDWR, 0o600); !errors.Is(err, unix.EOPNOTSUPP) {
		t.Errorf("O_TMPFILE: %v, want EOPNOTSUPP", err)
	}
	if fsys.FD() != -1 {
		t.Fatalf("FD %d, want -1", fsys.FD())
	}
	var sf unix.Statfs_t
	var st unix.Stat_t
	if err := unix.Fstatfs(fsys.FD(), &sf); err == nil {
		t.Error("fstatfs of FD answered: the tier would trust directories' link counts on its type")
	}
	if err := unix.Fstat(fsys.FD(), &st); errors.Is(err, unix.ENOTCONN) || err == nil {
		t.Errorf("fstat of FD: %v, want an error other than ENOTCONN", err)
	}
	if gone, _, err := fsys.Gone(); gone || err != nil || !fsys.PathIsDir() || fsys.Reopen() != nil {
		t.Error("a memory disk went")
	}
	if err := fsys.Rename("d", "e", unix.RENAME_WHITEOUT); !errors.Is(err, unix.EINVAL) {
		t.Errorf("RENAME_WHITEOUT: %v, want EINVAL", err)
	}
}

// TestStatfsCountsNamedBytes: Statfs reports the capacity given to New,
// and f_bavail what the files with a name leave of it; a file's bytes
// come back when its last name goes, even while it is open.
func TestStatfsCountsNamedBytes(t *testing.T) {
	const capacity = 16 << 20
	_, fsys := open(t, capacity)
	free := func() int64 {
		var st unix.Statfs_t
		must(t, fsys.Statfs(&st))
		if st.Blocks*uint64(st.Bsize) != capacity {
			t.Fatalf("statfs: %d blocks of %d, want %d bytes", st.Blocks, st.Bsize, capacity)
		}
		return int64(st.Bavail) * st.Bsize
	}
	if got := free(); got != capacity {
		t.Fatalf("empty disk: %d free, want %d", got, capacity)
	}
	must(t, fsys.WriteFile("f", make([]byte, 1<<20), 0o600))
	must(t, fsys.Link("f", "g"))
	if got := free(); got != capacity-1<<20 {
		t.Fatalf("a 1 MiB file of two names: %d free, want %d", got, capacity-1<<20)
	}
	f, err := fsys.OpenRegular("f")
	must(t, err)
	defer f.Close()
	must(t, fsys.Unlink("f"))
	must(t, fsys.Unlink("g"))
	if got := free(); got != capacity {
		t.Fatalf("after the last name went: %d free, want %d", got, capacity)
	}
	if n, err := f.ReadAt(make([]byte, 1<<20), 0); n != 1<<20 || err != nil {
		t.Fatalf("the open file: read %d %v", n, err)
	}
}

// TestDescriptorsAreTheFile: what the tiers do with a descriptor (mmap,
// fsetxattr, O_DIRECT pwrite, fchmod) reaches the file behind the name.
func TestDescriptorsAreTheFile(t *testing.T) {
	_, fsys := open(t, 1<<20)
	f, err := fsys.OpenFile("f", unix.O_RDWR|unix.O_CREAT|unix.O_EXCL, 0o644)
	must(t, err)
	defer f.Close()
	must(t, f.Truncate(4096))
	m, err := unix.Mmap(int(f.Fd()), 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	must(t, err)
	copy(m, "mapped")
	must(t, unix.Munmap(m))
	if b, err := fsys.ReadFile("f"); err != nil || string(b[:6]) != "mapped" {
		t.Fatalf("after a write through a mapping: %q %v", b[:6], err)
	}
	must(t, unix.Fsetxattr(int(f.Fd()), "user.ucm.crc", []byte("1234"), 0))
	buf := make([]byte, 16)
	if n, err := fsys.Getxattr("f", "user.ucm.crc", buf); err != nil || string(buf[:n]) != "1234" {
		t.Fatalf("getxattr: %q %v", buf[:n], err)
	}
	must(t, unix.Fchmod(int(f.Fd()), 0o600))
	var st unix.Stat_t
	must(t, fsys.Stat("f", &st))
	if st.Mode != unix.S_IFREG|0o600 || st.Nlink != 1 {
		t.Fatalf("stat after fchmod: mode %o, %d links", st.Mode, st.Nlink)
	}
}

// TestDiskOutlivesItsFilesystems: a restart (a view closed, another
// opened) finds the files; a descriptor of the first view still works;
// Disk.Close frees the files, a descriptor still open keeps its own, and
// the views answer EBADF.
func TestDiskOutlivesItsFilesystems(t *testing.T) {
	d, fsys := open(t, 1<<20)
	must(t, fsys.MkdirAll("m/ab", 0o755))
	must(t, fsys.WriteFile("m/ab/x.bin", []byte("kept"), 0o644))
	f, err := fsys.OpenRegular("m/ab/x.bin")
	must(t, err)
	defer f.Close()
	must(t, fsys.Close())
	var st unix.Stat_t
	if err := fsys.Lstat("m", &st); !errors.Is(err, unix.EBADF) {
		t.Fatalf("a closed view: %v, want EBADF", err)
	}
	again, err := d.Open(testDir, 0o700)
	must(t, err)
	if b, err := again.ReadFile("m/ab/x.bin"); err != nil || string(b) != "kept" {
		t.Fatalf("after the restart: %q %v", b, err)
	}
	if _, err := d.Open("/elsewhere", 0o700); err == nil {
		t.Fatal("a disk opened at another path")
	}
	must(t, d.Close())
	if b, err := os.ReadFile(fmt.Sprintf("/proc/self/fd/%d", f.Fd())); err != nil || string(b) != "kept" {
		t.Fatalf("a descriptor open at the disk's close: %q %v", b, err)
	}
	if err := again.Lstat("m", &st); !errors.Is(err, unix.EBADF) {
		t.Fatalf("a view of a closed disk: %v, want EBADF", err)
	}
	fresh, err := New(testDir, 0)
	must(t, err)
	if _, err := fresh.Open(testDir, 0); !errors.Is(err, unix.ENOENT) {
		t.Fatalf("a first open without a perm: %v, want ENOENT", err)
	}
}

// TestConcurrentNames: creates, renames, links and removals from many
// goroutines leave the tree and the counts consistent (run with -race).
func TestConcurrentNames(t *testing.T) {
	_, fsys := open(t, 64<<20)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			dir := fmt.Sprintf("m/%02x", g)
			for i := range 50 {
				tmp, name := fmt.Sprintf("%s/.tmp%d", dir, i), fmt.Sprintf("%s/%d.bin", dir, i)
				if err := fsys.MkdirAll(dir, 0o755); err != nil {
					t.Error(err)
					return
				}
				if err := fsys.WriteFile(tmp, []byte(name), 0o644); err != nil {
					t.Error(err)
					return
				}
				if err := fsys.Rename(tmp, name, unix.RENAME_NOREPLACE); err != nil {
					t.Error(err)
					return
				}
				if err := fsys.Link(name, name+".l"); err != nil {
					t.Error(err)
					return
				}
				if i%2 == 0 {
					if err := fsys.Unlink(name); err != nil {
						t.Error(err)
					}
				}
			}
		})
	}
	wg.Wait()
	names, err := fsys.ReadDirNames("m")
	must(t, err)
	if len(names) != 8 || nlink(t, fsys, "m") != 10 {
		t.Fatalf("m holds %d directories, %d links", len(names), nlink(t, fsys, "m"))
	}
	for _, dir := range names {
		ents, err := fsys.ReadDirStat("m/" + dir)
		must(t, err)
		if len(ents) != 75 {
			t.Fatalf("m/%s holds %d names, want 75", dir, len(ents))
		}
	}
}
