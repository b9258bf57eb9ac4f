package store

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/ucmfs/ucmfs/layout/files"
)

// TestDirTree: the tree of a files model's directories finds, lists and
// forgets a directory by its own path, whatever else the model holds;
// removing a directory forgets what was known under it, and the counts
// follow.
func TestDirTree(t *testing.T) {
	var tr treeSet
	tr.setBounds(-1, -1)
	tr.add("m", "a/b/c")
	tr.add("m", "a/b/d")
	tr.add("m", "x")
	tr.add("n", "a")
	for _, d := range []string{"a", "a/b", "a/b/c", "a/b/d", "x"} {
		if !tr.known("m", d) {
			t.Errorf("%s not known", d)
		}
	}
	for _, d := range []string{"b", "a/c", "a/b/c/d", "ab"} {
		if tr.known("m", d) {
			t.Errorf("%s known", d)
		}
	}
	got := tr.children("m", "a/b")
	slices.Sort(got)
	if !slices.Equal(got, []string{"c", "d"}) {
		t.Errorf("children of a/b: %q", got)
	}
	if got := tr.children("m", ""); len(got) != 2 {
		t.Errorf("children of the model: %q", got)
	}
	if tr.total != 6 {
		t.Errorf("total %d, want 6", tr.total)
	}
	tr.remove("m", "a/b")
	if tr.known("m", "a/b/c") || tr.known("m", "a/b") || !tr.known("m", "a") {
		t.Error("remove of a/b")
	}
	if tr.total != 3 {
		t.Errorf("total %d after the remove, want 3", tr.total)
	}
	tr.drop("m")
	if tr.total != 1 || tr.known("m", "a") || !tr.known("n", "a") {
		t.Errorf("after drop: total %d", tr.total)
	}
}

// TestFilesMkdirBounded: a user's mkdirs make at most its share of the
// directories (EDQUOT past it), everyone's at most the bound (ENOSPC);
// an rmdir gives its directory back, and directories found on a tier
// count in all but against no user.
func TestFilesMkdirBounded(t *testing.T) {
	s := newTestStore(t, Options{Layout: files.Name, MaxDirs: 6, MaxDirsPerUser: 3})
	s.Models().Add("e")
	const bad, other = 1000, 1001
	for i := range 3 {
		if err := s.FilesMkdir("e", fmt.Sprintf("d%d", i), bad); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.FilesMkdir("e", "d3", bad); !errors.Is(err, ErrQuota) {
		t.Fatalf("mkdir past the user's share: %v, want ErrQuota", err)
	}
	if err := s.FilesMkdir("e", "d0/sub", other); err != nil {
		t.Fatalf("another user's mkdir: %v", err)
	}
	if err := s.FilesRmdir("e", "d1"); err != nil {
		t.Fatal(err)
	}
	if err := s.FilesMkdir("e", "d3", bad); err != nil {
		t.Fatalf("mkdir after an rmdir: %v", err)
	}
	s.trees.add("e", "found/on/tier") // as FilesDir does for a directory of an earlier run
	if all, user := s.Models().DirCount(bad); all != 7 || user != 3 {
		t.Fatalf("counts %d in all, %d of the user; want 7, 3", all, user)
	}
	if err := s.FilesMkdir("e", "d4", other); !errors.Is(err, ErrNoSpace) {
		t.Fatalf("mkdir past the bound: %v, want ErrNoSpace", err)
	}
	if _, user := s.Models().DirCount(other); user != 1 {
		t.Fatalf("a refused mkdir counted: %d", user)
	}
}
