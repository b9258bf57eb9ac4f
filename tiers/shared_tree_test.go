package tiers

import (
	"testing"
	"time"

	"github.com/ucmfs/ucmfs/format"
)

// TestSharedTreeDirMadeHereNotGone: a directory of a files model checked
// on the share while it did not exist (its answer, gone, kept for a TTL),
// then made by this host: it is not gone. It was, for the rest of the
// TTL, and the store forgot the directory the engine had just made
// (llm-d's makedirs then failed ENOENT one level down on GlusterFS).
func TestSharedTreeDirMadeHereNotGone(t *testing.T) {
	s := sharedStack(t, 8<<20, t.TempDir(), time.Hour, DirConfig{})
	if err := s.MarkTree("eng"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(format.FileKey("eng", "x/f.bin"), []byte("a file"), true); err != nil {
		t.Fatal(err) // the model exists on the share
	}
	if !s.RevalidateTreeDir("eng", "a/b") {
		t.Fatal("a directory no tier has is not gone")
	}
	for _, rel := range []string{"a", "a/b"} {
		if err := s.MakeDir("eng", rel); err != nil {
			t.Fatal(err)
		}
	}
	for _, rel := range []string{"a/b", "a"} {
		if s.RevalidateTreeDir("eng", rel) {
			t.Errorf("%s, made on this host after a check found it gone, is gone", rel)
		}
	}
}
