package tiers

import (
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ucmfs/ucmfs/format"
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
