package fs

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestFilesRenameStillOpen: a file its process renames over another name
// while a descriptor of it is still open is that name's file for the
// process at once (it publishes at its last release), and after that for
// everyone. Found by random operations under load: an O_TRUNC rewrite
// closed with nothing written (an empty file publishes at its release,
// which came late) and opened again for reading, then renamed over a
// published file; the name kept the replaced file's 70,000 bytes for
// good.
func TestFilesRenameStillOpen(t *testing.T) {
	m := newMount(t, Options{Passthrough: true})
	dir := m.model(t, "eng", "files")
	b, a := filepath.Join(dir, "b"), filepath.Join(dir, "a")
	publishFile(t, a, []byte("the file the rename replaces"))
	publishFile(t, b, []byte("b's first version"))
	dup := writeHeld(t, b, unix.O_CREAT|unix.O_TRUNC, nil)
	reader := openKept(t, b)
	if err := os.Rename(b, a); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(a); err != nil || len(got) != 0 {
		t.Errorf("the renaming process reads %q, %v", got, err)
	}
	unix.Close(dup)
	reader.Close()
	catReads(t, a, "") // the last release published it
	if _, err := os.Stat(b); !os.IsNotExist(err) {
		t.Errorf("b after the rename: %v", err)
	}
}

// TestFilesRenameReopened: a published file opened again for writing
// (O_RDWR, O_APPEND) and renamed over another name before its close,
// nothing written, is that name's file, during and after the close.
// Before, the close took it for a file left as it was and dropped it,
// though the rename had removed the name it came from: its bytes were
// lost and the name kept the file the rename replaced.
func TestFilesRenameReopened(t *testing.T) {
	m := newMount(t, Options{Passthrough: true})
	dir := m.model(t, "eng", "files")
	for _, c := range []struct {
		name  string
		flags int
	}{{"rdwr", unix.O_RDWR}, {"append", unix.O_WRONLY | unix.O_APPEND}} {
		t.Run(c.name, func(t *testing.T) {
			b, a := filepath.Join(dir, c.name+".b"), filepath.Join(dir, c.name+".a")
			publishFile(t, a, []byte("replaced"))
			publishFile(t, b, []byte("moved"))
			fd, err := unix.Open(b, c.flags, 0)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(b, a); err != nil {
				t.Fatal(err)
			}
			if got, err := os.ReadFile(a); err != nil || string(got) != "moved" {
				t.Errorf("before the close: %q, %v", got, err)
			}
			unix.Close(fd)
			catReads(t, a, "moved")
		})
	}
}

// catReads waits until another process (cat(1)) reads want at p: a
// release, which publishes, comes after close returns (polled, bounded).
func catReads(t *testing.T, p, want string) {
	t.Helper()
	var out []byte
	var err error
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if out, err = exec.Command("cat", p).Output(); err == nil && string(out) == want {
			return
		}
	}
	t.Errorf("another process reads %q, %v at %s, want %q", out, err, p, want)
}

// TestFilesRenameOpenThenAgain: a published file that a reader keeps
// open, opened again for writing, written, renamed away while open and
// closed, then written anew under its old name: the new file reads its
// own bytes. Before, it got the number of the old version's node (which
// the kernel still held, under the new name and for the reader), and a
// read of it returned the old version's 10 bytes while stat said 70,000.
func TestFilesRenameOpenThenAgain(t *testing.T) {
	m := newMount(t, Options{Passthrough: true})
	dir := m.model(t, "eng", "files")
	e, a := filepath.Join(dir, "e"), filepath.Join(dir, "a")
	publishFile(t, e, []byte("ten bytes!"))
	openKept(t, e)
	fd, err := unix.Open(e, unix.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := unix.Write(fd, []byte("rewritten in place, longer")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(e, a); err != nil {
		t.Fatal(err)
	}
	unix.Close(fd)
	if err := os.WriteFile(e, []byte("the new e"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(e); err != nil || string(got) != "the new e" {
		t.Errorf("the new e reads %q, %v", got, err)
	}
	if got, err := os.ReadFile(a); err != nil || string(got) != "rewritten in place, longer" {
		t.Errorf("a reads %q, %v", got, err)
	}
}
