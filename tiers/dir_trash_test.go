package tiers_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/internal/tiertest"
	"github.com/ucmfs/ucmfs/tiers"
)

// TestDirTrash: a deleted file (a user's removal) leaves its name at once (into the trash,
// which the reaper empties); a file trashed by a tier that stopped before
// its reaper ran does not come back when the tier opens again, and that
// tier empties the trash.
func TestDirTrash(t *testing.T) {
	dir := t.TempDir()
	d, err := tiers.NewDirTier(tiers.DirConfig{Kind: "nvme", Dir: dir, Capacity: 1 << 30, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	var keys []format.Key
	for i := range 40 {
		k := tiertest.Key("m", i)
		tiertest.Put(t, d, k, tiertest.Payload(uint64(i), 4096), tiers.CommitOptions{})
		keys = append(keys, k)
	}
	for _, k := range keys[:20] {
		if err := d.Delete(k); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(dir, k.Path())); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s still at its name after Remove: %v", k, err)
		}
	}
	trash := filepath.Join(dir, ".trash")
	waitEmpty(t, trash)
	// The reaper counts a file after its unlink returns: the trash can be
	// empty a moment before the count is whole.
	for deadline := time.Now().Add(time.Minute); d.TrashReaped() < 20 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if got := d.TrashReaped(); got != 20 {
		t.Errorf("the reaper unlinked %d files, want 20", got)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	// What a daemon killed before its reaper ran leaves: files in the
	// trash, gone from their names.
	for i, k := range keys[20:30] {
		if err := os.Rename(filepath.Join(dir, k.Path()), filepath.Join(trash, "old-"+string(rune('a'+i)))); err != nil {
			t.Fatal(err)
		}
	}
	d = newDir(t, tiers.DirConfig{Dir: dir, Capacity: 1 << 30})
	if u := d.Usage(); u.Files != 10 {
		t.Errorf("reopened with %d files, want the 10 never removed", u.Files)
	}
	for _, k := range keys[:30] {
		if _, err := d.Stat(k); !errors.Is(err, tiers.ErrNotFound) {
			t.Errorf("removed %s came back: %v", k, err)
		}
	}
	waitEmpty(t, trash)
}

// waitEmpty polls until dir holds no entry, failing after a minute.
func waitEmpty(t *testing.T, dir string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(ents) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still holds %d entries after a minute", dir, len(ents))
		}
	}
}
