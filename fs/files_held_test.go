package fs

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// closeHeld closes fd and returns a duplicate of it, closed at the end
// of the test: the kernel sends the file's release only when the
// duplicate closes, as it does late after any close on a busy machine,
// or never while a forked child keeps the descriptor.
func closeHeld(t *testing.T, fd int) int {
	t.Helper()
	dup, err := unix.Dup(fd)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Close(fd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(dup) })
	return dup
}

// syncedWrite, among writeHeld's flags, fsyncs the file before the close.
const syncedWrite = 1 << 40

// writeHeld opens p for writing with flags, writes b and closes it (after
// an fsync with syncedWrite), a duplicate of the descriptor left open
// (closeHeld), which it returns.
func writeHeld(t *testing.T, p string, flags int, b []byte) int {
	t.Helper()
	fd, err := unix.Open(p, unix.O_WRONLY|flags&^syncedWrite, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := unix.Write(fd, b); err != nil {
		t.Fatal(err)
	}
	if flags&syncedWrite != 0 {
		if err := unix.Fsync(fd); err != nil {
			t.Fatal(err)
		}
	}
	return closeHeld(t, fd)
}

// statSize is the size another process (stat(1)) finds at p, or its
// error.
func statSize(p string) (string, error) {
	out, err := exec.Command("stat", "-c", "%s", p).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// TestFilesEmptyFileAtClose: an empty file of a files model closed by
// its writer, its release not come yet (a duplicate of the descriptor
// open), is in its process's listing, as its lookups find it; another
// process does not see it, since a write through the duplicate may come
// (a shell's `cat x > f`, dd's output): when it does, the file publishes
// whole at the next close, never seen empty; and an empty file publishes
// empty at its release. Before, the writer's own listing left the file
// out until its release (seen in random operations under load, where
// releases come late).
func TestFilesEmptyFileAtClose(t *testing.T) {
	m := newMount(t, Options{Passthrough: true})
	dir := m.model(t, "eng", "files")
	p := filepath.Join(dir, "out")
	dup := writeHeld(t, p, unix.O_CREAT|unix.O_TRUNC, nil)
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) != 1 || ents[0].Name() != "out" {
		t.Fatalf("the writer's listing after the close: %v, %v", ents, err)
	}
	if size, err := statSize(p); err == nil {
		t.Fatalf("another process's stat while a write may come: %q, want ENOENT", size)
	}
	if _, err := unix.Write(dup, []byte("written later")); err != nil {
		t.Fatal(err)
	}
	if err := unix.Close(dup); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(p); err != nil || string(got) != "written later" {
		t.Errorf("after the later write: %q, %v", got, err)
	}
	lock := filepath.Join(dir, "lock")
	unix.Close(writeHeld(t, lock, unix.O_CREAT|unix.O_TRUNC, nil))
	// The release comes after close returns: another process finds the
	// file once it came (polled, bounded).
	size, err := statSize(lock)
	for deadline := time.Now().Add(time.Minute); err != nil && time.Now().Before(deadline); size, err = statSize(lock) {
		time.Sleep(5 * time.Millisecond)
	}
	if err != nil || size != "0" {
		t.Errorf("an empty file after its release: %q, %v", size, err)
	}
}

// TestFilesRenameOverHeldFile: a rename over a name its own process
// still has a descriptor of (the close's release not come yet) makes the
// name the renamed file for that process too, and a rename of the name
// then moves that file. Before, the process went on finding its own file
// there, and the next rename published the replaced bytes under the new
// name.
func TestFilesRenameOverHeldFile(t *testing.T) {
	m := newMount(t, Options{Passthrough: true})
	dir := m.model(t, "eng", "files")
	b, c := filepath.Join(dir, "b"), filepath.Join(dir, "c")
	publishFile(t, b, []byte("old"))
	writeHeld(t, b, unix.O_APPEND, nil) // opened for appending, nothing written
	publishFile(t, c, []byte("renamed"))
	if err := os.Rename(c, b); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(b); err != nil || string(got) != "renamed" {
		t.Errorf("after the rename over it: %q, %v", got, err)
	}
	moved := filepath.Join(dir, "moved")
	if err := os.Rename(b, moved); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(moved); err != nil || string(got) != "renamed" {
		t.Errorf("renamed again: %q, %v", got, err)
	}
	if err := os.Rename(moved, b); err != nil {
		t.Fatal(err)
	}
	held := writeHeld(t, b, unix.O_CREAT|unix.O_TRUNC, []byte("again"))
	publishFile(t, c, []byte("over a file written"))
	if err := os.Rename(c, b); err != nil {
		t.Fatal(err)
	}
	if _, err := unix.Write(held, []byte(" and more")); err != nil {
		t.Fatal(err) // into the replaced file, unlinked: dropped
	}
	unix.Close(held)
	if got, err := os.ReadFile(b); err != nil || string(got) != "over a file written" {
		t.Errorf("after the rename over a file written: %q, %v", got, err)
	}
}

// TestFilesReaderAfterHeldClose: a reader that opens a file its own
// process wrote, fsynced and closed (a duplicate still open) reads the
// published bytes, and keeps reading them when the process writes the
// file again. Before, the open went to the file being written, and the
// rewrite changed the bytes under the reader.
func TestFilesReaderAfterHeldClose(t *testing.T) {
	m := newMount(t, Options{Passthrough: true})
	dir := m.model(t, "eng", "files")
	p := filepath.Join(dir, "b")
	writeHeld(t, p, unix.O_CREAT|unix.O_EXCL|syncedWrite, []byte("first"))
	kept := openKept(t, p)
	if err := os.Truncate(p, 2); err != nil {
		t.Fatal(err)
	}
	writeHeld(t, p, unix.O_CREAT|unix.O_TRUNC, []byte("second, longer"))
	keptReads(t, "the reader", kept, []byte("first"))
	if got, err := os.ReadFile(p); err != nil || string(got) != "second, longer" {
		t.Errorf("the name reads %q, %v", got, err)
	}
}

// TestFilesDirMoveHeldFile: a directory holding files whose writer closed
// them, with a duplicate descriptor still open and nothing written since
// they published (an fsync, an open for appending), moves at once, the
// files with it; a target that is not
// empty is ENOTEMPTY, whatever is beneath the directory. Before, the
// move waited a second for the releases, then failed with EBUSY, and
// answered EBUSY before ENOTEMPTY.
func TestFilesDirMoveHeldFile(t *testing.T) {
	m := newMount(t, Options{Passthrough: true})
	dir := m.model(t, "eng", "files")
	for _, d := range []string{"d", "full"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	publishFile(t, filepath.Join(dir, "full", "x"), []byte("x"))
	writeHeld(t, filepath.Join(dir, "d", "synced"), unix.O_CREAT|unix.O_EXCL|syncedWrite, []byte("synced"))
	publishFile(t, filepath.Join(dir, "d", "log"), []byte("log"))
	writeHeld(t, filepath.Join(dir, "d", "log"), unix.O_APPEND, nil)
	if err := unix.Rename(filepath.Join(dir, "d"), filepath.Join(dir, "full")); !errors.Is(err, syscall.ENOTEMPTY) {
		t.Errorf("a move onto a directory not empty: %v, want ENOTEMPTY", err)
	}
	if err := unix.Rename(filepath.Join(dir, "d"), filepath.Join(dir, "e")); err != nil {
		t.Fatalf("the move: %v", err)
	}
	for name, want := range map[string]string{"synced": "synced", "log": "log"} {
		if got, err := os.ReadFile(filepath.Join(dir, "e", name)); err != nil || string(got) != want {
			t.Errorf("e/%s after the move: %q, %v", name, got, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "d")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("d after the move: %v", err)
	}
}

// TestFilesEmptiedHeld: a published file its process opened with O_TRUNC
// and closed without writing, a duplicate still open, reads empty to that
// process (its new version, which may yet be written). An intermediate
// step of this change took such a file for one left as it was copied
// (settled) and gave its process the published bytes; this guards it.
func TestFilesEmptiedHeld(t *testing.T) {
	m := newMount(t, Options{Passthrough: true})
	dir := m.model(t, "eng", "files")
	p := filepath.Join(dir, "f")
	publishFile(t, p, []byte("published"))
	writeHeld(t, p, unix.O_CREAT|unix.O_TRUNC, nil)
	if got, err := os.ReadFile(p); err != nil || len(got) != 0 {
		t.Errorf("the process that emptied it reads %q, %v", got, err)
	}
}
