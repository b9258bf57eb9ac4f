package crashfs

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/ucmfs/ucmfs/tiers/rootfs"
	"golang.org/x/sys/unix"
)

// write creates rel beneath fs with b, fsynced when sync.
func write(t *testing.T, fs rootfs.FS, rel, b string, sync bool) {
	t.Helper()
	f, err := fs.OpenFile(rel, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(b); err != nil {
		t.Fatal(err)
	}
	if sync {
		if err := fs.SyncFile(f); err != nil {
			t.Fatal(err)
		}
	}
}

// openDisk makes a disk in a new directory and opens a filesystem on it.
func openDisk(t *testing.T) (string, *Disk, rootfs.FS) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tier")
	d, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	fs, err := d.Open(dir, 0o700)
	if err != nil {
		t.Fatal(err)
	}
	return dir, d, fs
}

// TestPowerCutForgetsWhatWasNotSynced: after a power cut a file is there
// with its bytes only if both its bytes and its directory's entry were
// synced; a name synced without its bytes comes back empty; a name not
// synced is gone, as are directories whose parent was not synced.
func TestPowerCutForgetsWhatWasNotSynced(t *testing.T) {
	dir, d, fs := openDisk(t)
	if err := fs.MkdirAll("m/ab", 0o700); err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(fs.SyncDir("."))
	must(fs.SyncDir("m"))
	write(t, fs, "m/ab/both", "durable", true)
	write(t, fs, "m/ab/bytes", "bytes only", true)
	write(t, fs, "m/ab/name", "name only", false)
	must(fs.Rename("m/ab/bytes", "m/ab/moved", 0)) // the rename is not synced
	must(fs.Mkdir("m/new", 0o700))                 // nor is m after this
	write(t, fs, "m/new/f", "in an unsynced directory", true)
	must(fs.SyncDir("m/new"))
	// the synced listing of m/ab holds both, name, and bytes (pre-rename)
	must(fs.Rename("m/ab/moved", "m/ab/bytes", 0))
	must(fs.SyncDir("m/ab"))
	must(fs.Rename("m/ab/bytes", "m/ab/later", 0))
	write(t, fs, "m/ab/both", "rewritten, not synced", false)

	d.PowerCut()
	if err := fs.Unlink("m/ab/both"); !errors.Is(err, unix.EIO) {
		t.Fatalf("unlink after the cut: %v, want EIO", err)
	}
	fs.Close()
	must(d.Restore())

	want := map[string]string{"m/ab/both": "durable", "m/ab/bytes": "bytes only", "m/ab/name": ""}
	for rel, b := range want {
		got, err := os.ReadFile(filepath.Join(dir, rel))
		if err != nil || string(got) != b {
			t.Errorf("%s: %q %v, want %q", rel, got, err, b)
		}
	}
	for _, rel := range []string{"m/ab/later", "m/ab/moved", "m/new"} {
		if _, err := os.Lstat(filepath.Join(dir, rel)); !os.IsNotExist(err) {
			t.Errorf("%s is there after the cut (%v): it was never durable", rel, err)
		}
	}
}

// TestFaults: FailAt fails the chosen operation once with its errno;
// CutAt cuts the power before the chosen one.
func TestFaults(t *testing.T) {
	_, d, fs := openDisk(t)
	defer fs.Close()
	d.FailAt(2, "mkdir", unix.ENOSPC)
	if err := fs.Mkdir("a", 0o700); err != nil {
		t.Fatal(err)
	}
	if err := fs.Mkdir("b", 0o700); !errors.Is(err, unix.ENOSPC) {
		t.Fatalf("second mkdir: %v, want ENOSPC", err)
	}
	if err := fs.Mkdir("b", 0o700); err != nil {
		t.Fatal(err)
	}
	d.CutAt(2)
	if err := fs.Mkdir("c", 0o700); err != nil {
		t.Fatal(err)
	}
	if err := fs.SyncDir("."); !errors.Is(err, unix.EIO) || !d.Cut() {
		t.Fatalf("sync after the cut: %v, want EIO", err)
	}
}

// TestTornKeepsLatestXattrs: a durable name whose latest bytes were never
// synced comes back, with Torn, as a prefix of those bytes, and with the
// xattrs set on it last (metadata, which a journaling filesystem commits
// with the names). It came back empty and without them: Restore read
// the latest file at its path after it had cleared the directory.
func TestTornKeepsLatestXattrs(t *testing.T) {
	dir, d, fs := openDisk(t)
	d.Torn = true
	d.TornLen = func(n int) int { return n / 2 }
	write(t, fs, "f", "latest bytes, never synced", false)
	if err := unix.Setxattr(filepath.Join(dir, "f"), "user.crc", []byte("1234"), 0); err != nil {
		t.Fatal(err)
	}
	if err := fs.SyncDir("."); err != nil {
		t.Fatal(err)
	}
	cutThenCheck(t, dir, d, fs, "latest bytes,", "1234")
}

// TestNameKeepsXattrsOfItsSync: a file whose name a directory's sync made
// durable, its bytes never synced, then renamed over (its inode gone)
// before the cut, comes back empty with the xattrs it had at that sync.
// It came back without them.
func TestNameKeepsXattrsOfItsSync(t *testing.T) {
	dir, d, fs := openDisk(t)
	write(t, fs, "f", "bytes never synced", false)
	if err := unix.Setxattr(filepath.Join(dir, "f"), "user.crc", []byte("1234"), 0); err != nil {
		t.Fatal(err)
	}
	if err := fs.SyncDir("."); err != nil {
		t.Fatal(err)
	}
	write(t, fs, "g", "the next version", false)
	if err := fs.Rename("g", "f", 0); err != nil {
		t.Fatal(err)
	}
	cutThenCheck(t, dir, d, fs, "", "1234")
}

// TestLateOperationsListed: an operation on a filesystem after its Close
// is refused and listed by Late.
func TestLateOperationsListed(t *testing.T) {
	_, d, fs := openDisk(t)
	fs.Close()
	if err := fs.Mkdir("a", 0o700); !errors.Is(err, unix.EBADF) {
		t.Fatalf("mkdir after the close: %v, want EBADF", err)
	}
	if late := d.Late(); len(late) != 1 || late[0] != "mkdir a" {
		t.Fatalf("late operations %q, want the mkdir", late)
	}
}

// TestSyncDirKeepsEachFileItsOwnXattrs: a rename over a durable name
// while its directory is synced (the sync of another file's publish)
// leaves the name's durable file with its own xattrs. The sync recorded
// the file it listed at the name with the xattrs of the file renamed
// over it since: after the cut the old bytes came back with the new
// version's CRC xattr, and the tiers quarantined the durable version as
// corrupt (the soak's "older", seed 1796657537023906878).
func TestSyncDirKeepsEachFileItsOwnXattrs(t *testing.T) {
	dir, d, fs := openDisk(t)
	publish := func(rel, b, crc string) {
		t.Helper()
		write(t, fs, rel, b, true)
		if err := unix.Setxattr(filepath.Join(dir, rel), "user.crc", []byte(crc), 0); err != nil {
			t.Fatal(err)
		}
	}
	publish("f", "v0, durable", "crc0")
	if err := fs.SyncDir("."); err != nil {
		t.Fatal(err)
	}
	publish("tmp", "v1, never made durable", "crc1")
	d.listed = func() {
		d.listed = nil
		if err := os.Rename(filepath.Join(dir, "tmp"), filepath.Join(dir, "f")); err != nil {
			t.Error(err)
		}
	}
	if err := fs.SyncDir("."); err != nil {
		t.Fatal(err)
	}
	cutThenCheck(t, dir, d, fs, "v0, durable", "crc0")
}

// cutThenCheck cuts the power, closes fs, restores d, and checks that
// the file f in dir came back with the bytes b and the xattr user.crc.
func cutThenCheck(t *testing.T, dir string, d *Disk, fs rootfs.FS, b, crc string) {
	t.Helper()
	d.PowerCut()
	fs.Close()
	if err := d.Restore(); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "f")
	if got, err := os.ReadFile(p); err != nil || string(got) != b {
		t.Errorf("f after the cut: %q %v, want %q", got, err, b)
	}
	val := make([]byte, 16)
	if n, err := unix.Getxattr(p, "user.crc", val); err != nil || string(val[:n]) != crc {
		t.Errorf("f's xattr after the cut: %q %v, want %q", val[:max(n, 0)], err, crc)
	}
}

// TestFileSyncAfterNameSyncKeepsItsXattrs: a file's xattrs set after a
// sync of its directory, then made durable by a sync of the file, come
// back with its bytes when the file was renamed over before the cut
// (its inode gone): the later record wins. They came back as of the
// directory's sync, which an fsync of the file had superseded (ext4's
// fsync commits the journal, the xattr with it).
func TestFileSyncAfterNameSyncKeepsItsXattrs(t *testing.T) {
	dir, d, fs := openDisk(t)
	write(t, fs, "f", "v0", false)
	setCRC := func(crc string) {
		t.Helper()
		if err := unix.Setxattr(filepath.Join(dir, "f"), "user.crc", []byte(crc), 0); err != nil {
			t.Fatal(err)
		}
	}
	setCRC("old")
	if err := fs.SyncDir("."); err != nil {
		t.Fatal(err)
	}
	setCRC("crc0")
	f, err := fs.OpenFile("f", unix.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := fs.SyncFile(f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	write(t, fs, "g", "v1, never made durable", false)
	if err := fs.Rename("g", "f", 0); err != nil {
		t.Fatal(err)
	}
	cutThenCheck(t, dir, d, fs, "v0", "crc0")
}
