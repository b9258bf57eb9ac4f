package fs

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// publishFile writes b to p as the engines do: a temporary name, then a
// rename over p.
func publishFile(t *testing.T, p string, b []byte) {
	t.Helper()
	if err := os.WriteFile(p+".tmp", b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(p+".tmp", p); err != nil {
		t.Fatal(err)
	}
}

// openKept opens p for reading, closed at the end of the test.
func openKept(t *testing.T, p string) *os.File {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// keptReads checks what the descriptor f, opened on an earlier version,
// reads and what fstat says of it.
func keptReads(t *testing.T, what string, f *os.File, want []byte) {
	t.Helper()
	got := make([]byte, 1<<16)
	n, _ := f.ReadAt(got, 0)
	if !bytes.Equal(got[:n], want) {
		t.Errorf("%s: the kept descriptor reads %q, want %q", what, got[:n], want)
	}
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() != int64(len(want)) {
		t.Errorf("%s: fstat of the kept descriptor says %d bytes, it reads %d", what, fi.Size(), len(want))
	}
}

// TestFilesUnlinkOpenThenAgain: a file of a files model removed while a
// reader has it open, then written again under its name, is a new file:
// its readers get its bytes, and the reader of the removed one keeps
// reading (and fstat describing) the removed one. Before, the new file
// got the removed one's node, which served the removed bytes to every
// reader of the name (and its size to the old reader's fstat).
func TestFilesUnlinkOpenThenAgain(t *testing.T) {
	m := newMount(t, Options{Passthrough: true})
	dir := m.model(t, "eng", "files")
	p := filepath.Join(dir, "c")
	publishFile(t, p, []byte("X"))
	f := openKept(t, p)
	keptReads(t, "opened", f, []byte("X"))
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	for i, again := range [][]byte{{}, []byte("second"), []byte("and a third")} {
		if i%2 == 0 {
			if err := os.WriteFile(p, again, 0o644); err != nil {
				t.Fatal(err)
			}
		} else {
			publishFile(t, p, again)
		}
		got, err := os.ReadFile(p)
		if err != nil || !bytes.Equal(got, again) {
			t.Fatalf("written again (%d): reads %q (%v), want %q", i, got, err, again)
		}
		fi, err := os.Stat(p)
		if err != nil || fi.Size() != int64(len(again)) {
			t.Fatalf("written again (%d): stat %v, %v", i, fi, err)
		}
		keptReads(t, "after the name was written again", f, []byte("X"))
		if i < 2 {
			g := openKept(t, p)
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			keptReads(t, "a second kept version", g, again)
		}
	}
}

// TestFilesReplacedFstat: a reader of a file that was replaced (a rename
// over it, or an O_TRUNC rewrite) reads the old version, and fstat of its
// descriptor describes that version, not the new one: SGLang's fast_file
// store drops a page whose fstat size is not the size it expects, and
// would drop a good page for it.
func TestFilesReplacedFstat(t *testing.T) {
	m := newMount(t, Options{Passthrough: true})
	dir := m.model(t, "eng", "files")
	p := filepath.Join(dir, "page")
	publishFile(t, p, []byte("XYZ"))
	f := openKept(t, p)
	keptReads(t, "opened", f, []byte("XYZ"))
	publishFile(t, p, []byte("0123456789"))
	keptReads(t, "after a rename over it", f, []byte("XYZ"))
	if err := os.WriteFile(p, []byte("12345"), 0o644); err != nil {
		t.Fatal(err)
	}
	keptReads(t, "after an O_TRUNC rewrite", f, []byte("XYZ"))
	if fi, err := os.Stat(p); err != nil || fi.Size() != 5 {
		t.Fatalf("the name: %v, %v", fi, err)
	}
	// A truncate by path makes a new version too; the name's stat and
	// read right after it are the new one's, though the old one is open
	// (the truncate went to its node, and the kernel's entry for the name
	// names that node until a notification drops it).
	g := openKept(t, p)
	if err := os.Truncate(p, 2); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(p); err != nil || fi.Size() != 2 {
		t.Fatalf("the name right after a truncate: %v, %v", fi, err)
	}
	if got, err := os.ReadFile(p); err != nil || string(got) != "12" {
		t.Fatalf("the name read right after a truncate: %q, %v", got, err)
	}
	keptReads(t, "a descriptor opened before a truncate", g, []byte("12345"))
	// The same through a node the kernel moved with a rename: the file
	// renamed while open, then the new name truncated.
	q := filepath.Join(dir, "q")
	publishFile(t, q, []byte("moved, then cut"))
	h := openKept(t, q)
	if err := os.Rename(q, p+"2"); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p+"2", 5); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(p + "2"); err != nil || string(got) != "moved" {
		t.Fatalf("the moved name read right after a truncate: %q, %v", got, err)
	}
	keptReads(t, "a descriptor of a file moved, then truncated", h, []byte("moved, then cut"))
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	keptReads(t, "after an unlink", f, []byte("XYZ"))
}

// TestFilesMovedVersions: descriptors kept open across moves, then the
// names replaced. A version replaced before its directory moved stays
// the old version (the move took the current one along: before, its
// node was made to serve the moved name, and fstat described the new
// version). A file renamed while open, then unlinked under its new name
// and written again there, is a new file for the kept descriptor too
// (the name had a node of its own by then, which was not open, and the
// version did not end).
func TestFilesMovedVersions(t *testing.T) {
	m := newMount(t, Options{Passthrough: true})
	dir := m.model(t, "eng", "files")
	if err := os.MkdirAll(filepath.Join(dir, "d", "e"), 0o755); err != nil {
		t.Fatal(err)
	}
	a := filepath.Join(dir, "d", "e", "a")
	publishFile(t, a, bytes.Repeat([]byte("7"), 7000))
	f := openKept(t, a)
	if err := os.Truncate(a, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "d"), filepath.Join(dir, "moved")); err != nil {
		t.Fatal(err)
	}
	keptReads(t, "a version replaced, then its directory moved", f, bytes.Repeat([]byte("7"), 7000))
	if fi, err := os.Stat(filepath.Join(dir, "moved", "e", "a")); err != nil || fi.Size() != 0 {
		t.Fatalf("the moved current version: %v, %v", fi, err)
	}

	b := filepath.Join(dir, "b")
	publishFile(t, b, []byte("kept across a rename"))
	g := openKept(t, b)
	c := filepath.Join(dir, "c")
	if err := os.Rename(b, c); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(c); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(c); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(c, []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	keptReads(t, "a file renamed, unlinked and written again", g, []byte("kept across a rename"))
	if got, err := os.ReadFile(c); err != nil || string(got) != "new" {
		t.Fatalf("the name written again: %q, %v", got, err)
	}
}

// TestFilesTruncateAfterOpenForWriting: a file opened for writing and
// closed with nothing written, then truncated by path at once: the
// truncate may reach the node of that open's version, which its release
// (sent after close returns) discards meanwhile; it is sent again to the
// published file (ESTALE), where it answered 0 and was lost (1 to 3 in
// 100 here).
func TestFilesTruncateAfterOpenForWriting(t *testing.T) {
	m := newMount(t, Options{Passthrough: true})
	dir := m.model(t, "eng", "files")
	for i := range 300 {
		p := filepath.Join(dir, "f"+strconv.Itoa(i))
		if err := os.WriteFile(p, bytes.Repeat([]byte("5"), 5000), 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := os.OpenFile(p, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		if err := os.Truncate(p, 10); err != nil {
			t.Fatalf("file %d: truncate: %v", i, err)
		}
		if got, err := os.ReadFile(p); err != nil || len(got) != 10 {
			t.Fatalf("file %d: after the truncate to 10 bytes: %d bytes, %v", i, len(got), err)
		}
	}
}

// TestFilesRenameAfterOpenForWriting: a file opened for writing and
// closed with nothing written, then renamed at once: the rename may find
// that open's version still being written, and discarded by its release
// meanwhile; the published file moves. Before, the rename failed with
// EIO ("file discarded before it was published"; found over io_uring).
func TestFilesRenameAfterOpenForWriting(t *testing.T) {
	m := newMount(t, Options{Passthrough: true})
	dir := m.model(t, "eng", "files")
	for i := range 300 {
		p := filepath.Join(dir, "f"+strconv.Itoa(i))
		if err := os.WriteFile(p, []byte("published"), 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		if err := os.Rename(p, p+".moved"); err != nil {
			t.Fatalf("file %d: rename: %v", i, err)
		}
		if got, err := os.ReadFile(p + ".moved"); err != nil || string(got) != "published" {
			t.Fatalf("file %d: after the rename: %q, %v", i, got, err)
		}
	}
}
