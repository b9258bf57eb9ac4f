package tiers

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/tiers/rootfs"
	"github.com/ucmfs/ucmfs/tiers/rootfs/crashfs"
	"golang.org/x/sys/unix"
)

// removalWithCopy runs a user's removal of a File written back to a
// share whose filesystem holds a second file under the name (GlusterFS's
// distribute layer after two hosts replaced it at once:
// dir/shared_copies.go), published at copyTime: once the removal unlinked
// the file the name resolved to, the next look at the name finds that
// other one. It returns the stack and the File's key.
func removalWithCopy(t *testing.T, copyTime time.Time) (*Stack, format.Key) {
	share := t.TempDir()
	k := format.FileKey("eng", "x/f.bin")
	name := filepath.Join(share, k.Path())
	other := filepath.Join(share, "other-copy")
	var unlinked, moved atomic.Bool
	wrap := hookedFS(func(op, rel string) error {
		switch {
		case op == "unlink" && rel == k.Path():
			unlinked.Store(true)
		case op == "stat" && rel == k.Path() && unlinked.Load() && !moved.Swap(true):
			if err := os.Rename(other, name); err != nil { // the name resolves to the other file now
				t.Error(err)
			}
		}
		return nil
	})
	b := sharedStack(t, 8<<20, share, testTTL, DirConfig{OpenFS: wrap})
	if err := b.MarkTree("eng"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Put(k, v1, false); err != nil {
		t.Fatal(err)
	}
	if !eventually(10*time.Second, func() bool { return !b.mem.Dirty(k) }) {
		t.Fatal("the File is not written back")
	}
	if err := os.WriteFile(other, v0, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(other, copyTime, copyTime); err != nil {
		t.Fatal(err)
	}
	if err := b.Delete(k); err != nil {
		t.Fatal(err)
	}
	return b, k
}

// TestSharedRemovalTakesEarlierCopy: the other file under the name is an
// earlier version. It came back at the next lookup (host A found version
// 0 after its removal of version 1, and SGLang's store, which skips a
// name that exists, stored nothing: TestSharedFSEngines/glusterfs). The
// removal takes it too: nothing is under the name after it.
func TestSharedRemovalTakesEarlierCopy(t *testing.T) {
	b, k := removalWithCopy(t, time.Now().Add(-time.Minute))
	if info, err := b.Stat(k); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after its removal the stack finds %s (%d bytes, published %v): %v", k.Path(), info.Size, info.MTime, err)
	}
}

// TestSharedRemovalKeepsLaterVersion: the other file was published after
// the removal began (another host's new version): it stays, the last
// publish wins.
func TestSharedRemovalKeepsLaterVersion(t *testing.T) {
	b, k := removalWithCopy(t, time.Now().Add(time.Minute))
	readsVersion(t, b, k, v0)
}

// noReplaceFS is a filesystem without renameat2's RENAME_NOREPLACE
// (EINVAL, as GlusterFS's and CephFS's FUSE clients answer) that counts
// the renames over an existing name.
type noReplaceFS struct {
	rootfs.FS
	over atomic.Int32
}

func (f *noReplaceFS) RenameOnce(oldRel, newRel string, flags uint) error {
	if flags&unix.RENAME_NOREPLACE != 0 {
		return &os.LinkError{Op: "rename", Old: oldRel, New: newRel, Err: unix.EINVAL}
	}
	var st unix.Stat_t
	if f.FS.Lstat(newRel, &st) == nil {
		f.over.Add(1)
	}
	return f.FS.RenameOnce(oldRel, newRel, flags)
}

// TestSharedReplaceWithoutNoReplaceRename: host B writes a File back
// to a share whose filesystem lacks RENAME_NOREPLACE, and another
// host's older version lands at its name just before B publishes: B's,
// the last published, replaces it, by removing it and publishing B's
// file anew, never by a rename over it (on GlusterFS two hosts' renames
// over one name left the replaced version's data under it, which came
// back once the name was removed).
func TestSharedReplaceWithoutNoReplaceRename(t *testing.T) {
	share := t.TempDir()
	k := format.FileKey("eng", "x/f.bin")
	foreign := filepath.Join(share, k.Path())
	var armed, landed atomic.Bool
	fs := &noReplaceFS{}
	open := func(d string, perm uint32) (rootfs.FS, error) {
		r, err := rootfs.Open(d, os.FileMode(perm))
		fs.FS = crashfs.Wrap(r, func(op, rel string) error {
			if (op == "link" || op == "rename") && rel == k.Path() && armed.Load() && landed.CompareAndSwap(false, true) {
				// The other host's version lands, older than B's.
				if err := os.MkdirAll(filepath.Dir(foreign), 0o755); err != nil {
					t.Error(err)
				}
				if err := os.WriteFile(foreign, v0, 0o644); err != nil {
					t.Error(err)
				}
				old := time.Now().Add(-time.Minute)
				if err := os.Chtimes(foreign, old, old); err != nil {
					t.Error(err)
				}
			}
			return nil
		})
		return fs, err
	}
	b := sharedStack(t, 8<<20, share, testTTL, DirConfig{OpenFS: open})
	if err := b.MarkTree("eng"); err != nil {
		t.Fatal(err)
	}
	armed.Store(true)
	if _, err := b.Put(k, v1, false); err != nil {
		t.Fatal(err)
	}
	if err := b.Flush(context.Background(), k); err != nil {
		t.Fatal(err)
	}
	if !landed.Load() {
		t.Fatal("the other host's version never landed")
	}
	got, err := os.ReadFile(foreign)
	if err != nil {
		t.Fatal(err)
	}
	mustEqual(t, "the share's file", got, v1)
	if n := fs.over.Load(); n != 0 {
		t.Fatalf("%d renames over an existing name on the share", n)
	}
}

// TestSharedRemovalHidesEarlierVersionBack: after host B removed a File,
// an earlier version comes back at its name on the share later (another
// client of GlusterFS looked the name up by the data file it knew, left
// on its brick, and the distribute layer restored the name). B takes it
// for removed: B finds nothing there, stores its own next version, and
// that one replaces it on the share (SGLang's store, which skips a name
// that exists, stored nothing, and every host served the earlier
// version for good).
func TestSharedRemovalHidesEarlierVersionBack(t *testing.T) {
	share := t.TempDir()
	k := format.FileKey("eng", "x/f.bin")
	name := filepath.Join(share, k.Path())
	b := sharedStack(t, 8<<20, share, testTTL, DirConfig{})
	if err := b.MarkTree("eng"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Put(k, v1, true); err != nil {
		t.Fatal(err)
	}
	if err := b.Delete(k); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, v0, 0o644); err != nil { // back, published before the removal
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Minute)
	if err := os.Chtimes(name, old, old); err != nil {
		t.Fatal(err)
	}
	if info, err := b.Stat(k); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after its removal the stack finds %s (%d bytes, published %v): %v", k.Path(), info.Size, info.MTime, err)
	}
	if _, err := b.Put(k, v2, false); err != nil {
		t.Fatal(err)
	}
	if err := b.Flush(context.Background(), k); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	mustEqual(t, "the share's file", got, v2)
}
