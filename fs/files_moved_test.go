package fs

import (
	"fmt"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestMovedFileNode: a published File renamed while a descriptor has it
// open keeps being served under its new name through that descriptor's
// node, which the kernel moved with the rename (and may also use for a
// lookup of the new name until it looks it up again): fsync makes it
// durable, fgetxattr reads its attributes, futimens sets its mtime.
// Before, each of them asked for the File's old name: ENOENT.
func TestMovedFileNode(t *testing.T) {
	m := newMount(t, Options{})
	m.model(t, "eng", "files")
	if err := os.WriteFile(m.path("eng", "a0"), []byte("kv page"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(m.path("eng", "a0"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := os.Rename(m.path("eng", "a0"), m.path("eng", "a1")); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Errorf("fsync through the moved node: %v", err)
	}
	buf := make([]byte, 64)
	if n, err := unix.Fgetxattr(int(f.Fd()), "user.ucm.state", buf); err != nil || string(buf[:n]) != "clean" {
		t.Errorf("fgetxattr state through the moved node: %q, %v; want clean after the fsync", buf[:max(n, 0)], err)
	}
	when := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ts := []unix.Timespec{unix.NsecToTimespec(when.UnixNano()), unix.NsecToTimespec(when.UnixNano())}
	// utimensat of /proc/self/fd/N: the node of the descriptor.
	if err := unix.UtimesNano(fmt.Sprintf("/proc/self/fd/%d", f.Fd()), ts); err != nil {
		t.Errorf("futimens through the moved node: %v", err)
	} else if fi, err := os.Stat(m.path("eng", "a1")); err != nil || !fi.ModTime().Equal(when) {
		t.Errorf("mtime of the renamed file after futimens: %v, %v; want %v", fi.ModTime(), err, when)
	}
	if got, err := os.ReadFile(m.path("eng", "a1")); err != nil || string(got) != "kv page" {
		t.Errorf("read of the renamed file: %q, %v", got, err)
	}
}
