package fs

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/internal/tiertest"
	"github.com/ucmfs/ucmfs/tiers"
)

// fsyncDir opens the directory p and fsyncs it, as a writer does after a
// rename to make the new name durable.
func fsyncDir(p string) error {
	d, err := os.Open(p)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// TestFsyncDir: fsync of any directory of the mount succeeds (it was
// EOPNOTSUPP), and the fsync of a directory makes the files it lists
// durable on the disk tier (written back, no longer dirty): a files
// model's root and subdirectories, a ucmb shard, a ucm-posix shard. The
// files of other directories are left to the write-back.
func TestFsyncDir(t *testing.T) {
	requireFUSE(t)
	// Write-back waits an hour: what is durable is what the fsyncs made so.
	st := tiertest.NewStackConfig(t, tiers.StackConfig{DirtyExpire: time.Hour}, testLogger(),
		tiers.MemConfig{Capacity: 64 << 20}, tiers.DirConfig{Kind: "nvme"})
	m := newMountWith(t, st, Options{})
	m.model(t, "eng", "files")
	m.model(t, "u", "ucm-posix")
	if err := os.MkdirAll(m.path("eng", "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]format.Key{}
	for _, rel := range []string{"p0", "a/p1", "a/b/p2"} {
		if err := os.WriteFile(m.path("eng", rel), []byte("page "+rel), 0o644); err != nil {
			t.Fatal(err)
		}
		files[rel] = format.FileKey("eng", rel)
	}
	if err := os.MkdirAll(m.path(testModel), 0o755); err != nil {
		t.Fatal(err)
	}
	blk, data := testBlock(testModel, 1, 4096)
	if err := writeFile(m.keyPath(blk), data); err != nil {
		t.Fatal(err)
	}

	// Each directory in turn: its own files become durable, the others'
	// stay as they were.
	steps := []struct {
		dir  string
		made []format.Key
	}{
		{m.path("eng", "a"), []format.Key{files["a/p1"]}},
		{m.path("eng"), []format.Key{files["p0"]}},
		{m.path("eng", "a", "b"), []format.Key{files["a/b/p2"]}},
		{filepath.Dir(m.keyPath(blk)), []format.Key{blk}},
	}
	durable := map[format.Key]bool{}
	for _, s := range steps {
		for _, k := range s.made {
			if !isDirty(m.st, k) {
				t.Fatalf("%s is not dirty before the fsync of %s: the test proves nothing", k, s.dir)
			}
		}
		if err := fsyncDir(s.dir); err != nil {
			t.Fatalf("fsync of %s: %v", s.dir, err)
		}
		for _, k := range s.made {
			durable[k] = true
		}
		for _, k := range append(mapValues(files), blk) {
			if dirty := isDirty(m.st, k); dirty == durable[k] {
				t.Errorf("after the fsync of %s: %s dirty=%v", s.dir, k, dirty)
			}
		}
	}
	for _, k := range append(mapValues(files), blk) {
		if _, err := onDisk(m.st, k); err != nil {
			t.Errorf("%s is not on the disk tier: %v", k, err)
		}
	}

	// Directories that list no files: the root, .ucm, a ucmb model, a
	// ucm-posix model and one of its shards.
	if err := os.Mkdir(m.path("u", "ab"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{m.path(), m.path(".ucm"), m.path(testModel), m.path("u"), m.path("u", "ab")} {
		if err := fsyncDir(d); err != nil {
			t.Errorf("fsync of %s: %v", d, err)
		}
	}
}

// mapValues returns the values of m.
func mapValues[K comparable, V any](m map[K]V) []V {
	out := make([]V, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}
