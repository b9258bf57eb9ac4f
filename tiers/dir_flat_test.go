package tiers

import (
	"testing"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/internal/blocktest"
)

// TestTreeDirFlat: on the private first tier, a name whose parent holds
// no subdirectory is no directory, answered without a stat of the name:
// a flat model, a leaf of a tree. The answer goes once a directory is
// made in the model, by an engine's mkdir or by a File written into a
// new subdirectory; a flat answer from a stat older than a mkdir is not
// taken.
func TestTreeDirFlat(t *testing.T) {
	s := newTestStack(t, 16<<20, t.TempDir(), StackConfig{})
	d := s.dirs[0]
	if s.TreeDirOnDisk("flat", "a") || !d.NoSubdirs("flat", "") {
		t.Fatal("a model with no directory on disk is not flat")
	}
	if err := s.MakeDir("flat", "a"); err != nil {
		t.Fatal(err)
	}
	if !s.TreeDirOnDisk("flat", "a") || d.NoSubdirs("flat", "") {
		t.Fatal("after mkdir the model is still taken for flat")
	}

	blocktest.WriteFile(t, d, format.FileKey("pages", "p.bin"), []byte("a page at the root"))
	if !d.NoSubdirs("pages", "") {
		t.Fatal("a model with files at its root only is not flat")
	}
	blocktest.WriteFile(t, d, format.FileKey("pages", "ns/q.bin"), []byte("a page in a subdirectory"))
	if d.NoSubdirs("pages", "") || !s.TreeDirOnDisk("pages", "ns") {
		t.Fatal("the directory a File was written into is not seen")
	}
	if s.TreeDirOnDisk("pages", "ns/x") || !d.NoSubdirs("pages", "ns") {
		t.Fatal("a leaf directory holding one file is not flat")
	}
	if err := s.MakeDir("pages", "ns/x"); err != nil {
		t.Fatal(err)
	}
	if !s.TreeDirOnDisk("pages", "ns/x") {
		t.Fatal("a directory made in a leaf taken for flat is not seen")
	}

}
