package tier

import (
	"testing"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/tiers/rootfs"
)

// TestDirCacheRemakesAGoneParent: a directory the cache knows (made for
// one File) goes (a directory move or an rmdir took it), and a File in
// another directory beneath it is published: Ensure makes the parent
// again. It failed with ENOENT (mkdir of a/c under a gone a), which a
// directory move in a files model met (integration TestFilesRandomOps:
// "memory tier: mkdir: mkdir …/eng/14/a/b: no such file or directory").
func TestDirCacheRemakesAGoneParent(t *testing.T) {
	r, err := rootfs.Open(t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var c DirCache
	if _, err := c.Ensure(r, format.FileKey("m", "a/b/f.bin")); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"m/a/b", "m/a"} {
		if err := r.Rmdir(d); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Ensure(r, format.FileKey("m", "a/c/f.bin")); err != nil {
		t.Fatalf("a File beneath a directory the cache knew and that went: %v", err)
	}
	if err := r.Mkdir("m/a/c/x", 0o755); err != nil {
		t.Fatalf("the directory made again: %v", err)
	}
}
