package tiers

import (
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/tiers/rootfs"
)

// landingFS is a shared tier's filesystem on which land runs once, in
// a touch of a File between its look at the file and its stamp: after
// the open that touched opens it by (OpenRegular), or before a utimes of
// its path.
type landingFS struct {
	rootfs.FS
	rel   string
	land  func()
	armed atomic.Bool // set around the touch
	done  atomic.Bool
}

func (l *landingFS) OpenRegular(rel string) (*os.File, error) {
	f, err := l.FS.OpenRegular(rel)
	if rel == l.rel && l.armed.Load() && l.done.CompareAndSwap(false, true) {
		l.land()
	}
	return f, err
}

func (l *landingFS) Chtimes(rel string, atime, mtime time.Time) error {
	if rel == l.rel && l.armed.Load() && l.done.CompareAndSwap(false, true) {
		l.land()
	}
	return l.FS.Chtimes(rel, atime, mtime)
}

// TestSharedFileTouchRacesReplacement: host B uses a File it holds
// (version 0), and its touch (which stamps the share's file, once per
// touchEvery, for the other hosts' eviction order) looks at the file and
// finds version 0; host A's replacement (remove, store version 1) lands
// before the stamp. The touch stamped A's file by its path and took the
// new mtime into B's index as its own: B served version 0 for good
// (TestSharedFSEngines/glusterfs/llm-d-fs, whose loads stamp each file's
// atime). The stamp now goes through the descriptor the look was made
// on: it stamps the old file, and B finds version 1.
func TestSharedFileTouchRacesReplacement(t *testing.T) {
	share := t.TempDir()
	k := format.FileKey("eng", "x/f.bin")
	a := sharedStack(t, 8<<20, share, testTTL, DirConfig{})
	land := func() {
		if err := a.Remove(k); err != nil {
			t.Error(err)
		}
		if _, err := a.Put(k, v1, true); err != nil {
			t.Error(err)
		}
	}
	fs := &landingFS{rel: k.Path(), land: land}
	open := func(d string, perm uint32) (rootfs.FS, error) {
		r, err := rootfs.Open(d, os.FileMode(perm))
		fs.FS = r
		return fs, err
	}
	b := sharedStack(t, 8<<20, share, testTTL, DirConfig{KeepRecent: time.Millisecond, OpenFS: open})
	if err := a.MarkTree("eng"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Put(k, v0, true); err != nil {
		t.Fatal(err)
	}
	mustEqual(t, "B's read of version 0", readAll(t, b, k), v0)
	time.Sleep(time.Millisecond) // the touch stamps a file a touchEvery old
	fs.armed.Store(true)
	dirTier(b, 0).Touch(k)
	if !fs.done.Load() {
		t.Fatal("the touch stamped nothing")
	}
	readsVersion(t, b, k, v1)
}
