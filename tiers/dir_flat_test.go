package tiers

import (
	"testing"

	"github.com/ucmfs/ucmfs/format"
)

// TestTreeDirFlat: a files model with no subdirectory on the private first
// tier answers "no such directory" without a stat of the name, and stops
// doing so once a directory is made in it, by an engine's mkdir or by a
// File written into a subdirectory; a stale flat answer is not learned.
func TestTreeDirFlat(t *testing.T) {
	s := newTestStack(t, 16<<20, t.TempDir(), StackConfig{})
	d := s.dirs[0]
	if s.TreeDirOnDisk("flat", "a") || !d.noSubdirs("flat") {
		t.Fatal("a model with no directory on disk is not flat")
	}
	if err := s.MakeDir("flat", "a"); err != nil {
		t.Fatal(err)
	}
	if !s.TreeDirOnDisk("flat", "a") || d.noSubdirs("flat") {
		t.Fatal("after mkdir the model is still taken for flat")
	}

	k := format.FileKey("pages", "p.bin")
	writeFile(t, d, k, []byte("a page at the root"))
	if !d.noSubdirs("pages") {
		t.Fatal("a model with files at its root only is not flat")
	}
	writeFile(t, d, format.FileKey("pages", "ns/q.bin"), []byte("a page in a subdirectory"))
	if d.noSubdirs("pages") || !s.TreeDirOnDisk("pages", "ns") {
		t.Fatal("the directory a File was written into is not seen")
	}

	// A stat that began before a mkdir does not leave a flat answer.
	gen := d.flat.generation()
	d.flat.madeDir("other")
	d.flat.learn("other", gen, true)
	if _, ok := d.flat.known("other"); ok {
		t.Fatal("a flat answer older than a mkdir was kept")
	}
}

// writeFile writes data as k on d.
func writeFile(t *testing.T, d *DirTier, k format.Key, data []byte) {
	t.Helper()
	w, err := d.Create(k)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Commit(CommitOptions{CRC: format.CRC32C(data), HasCRC: true}); err != nil {
		t.Fatal(err)
	}
}
