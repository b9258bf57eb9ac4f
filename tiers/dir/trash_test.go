package dir_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/internal/tiertest"
	"github.com/ucmfs/ucmfs/tiers/dir"
	"github.com/ucmfs/ucmfs/tiers/tier"
	"golang.org/x/sys/unix"
)

// TestDirTrash: a deleted file (a user's removal) leaves its name at once
// and its space once the reaper closed the descriptor held for it, by
// Close at the latest; what an earlier version left in <root>/.trash (a
// file renamed there by a daemon killed before its reaper ran) does not
// come back when the tier opens again, and that tier removes it.
func TestDirTrash(t *testing.T) {
	root := t.TempDir()
	d, err := dir.New(dir.Config{Kind: "nvme", Dir: root, Capacity: 1 << 30, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	var keys []format.Key
	for i := range 40 {
		k := tiertest.Key("m", i)
		tiertest.Put(t, d, k, tiertest.Payload(uint64(i), 4096), tier.CommitOptions{})
		keys = append(keys, k)
	}
	for _, k := range keys[:20] {
		if err := d.Delete(k); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(root, k.Path())); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s still at its name after Delete: %v", k, err)
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if got := d.TrashReaped(); got != 20 {
		t.Errorf("the reaper freed %d files by Close, want 20", got)
	}
	// What an earlier version's daemon killed before its reaper ran
	// leaves: files in the trash, gone from their names.
	trash := filepath.Join(root, ".trash")
	if err := os.Mkdir(trash, 0o700); err != nil {
		t.Fatal(err)
	}
	for i, k := range keys[20:30] {
		if err := os.Rename(filepath.Join(root, k.Path()), filepath.Join(trash, "old-"+string(rune('a'+i)))); err != nil {
			t.Fatal(err)
		}
	}
	d = newDir(t, dir.Config{Dir: root, Capacity: 1 << 30})
	if u := d.Usage(); u.Files != 10 {
		t.Errorf("reopened with %d files, want the 10 never removed", u.Files)
	}
	for _, k := range keys[:30] {
		if _, err := d.Stat(k); !errors.Is(err, tier.ErrNotFound) {
			t.Errorf("removed %s came back: %v", k, err)
		}
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
		var st unix.Stat_t
		if errors.Is(unix.Lstat(trash, &st), unix.ENOENT) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still there a minute after the start", trash)
		}
	}
}

// TestDirTrashFreesSpace: a deleted file's blocks are free once the
// reaper has closed its descriptor (statfs sees them again).
func TestDirTrashFreesSpace(t *testing.T) {
	root := t.TempDir()
	d, err := dir.New(dir.Config{Kind: "nvme", Dir: root, Capacity: 1 << 30, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	k := tiertest.Key("m", 1)
	tiertest.Put(t, d, k, tiertest.Payload(1, 64<<20), tier.CommitOptions{})
	p := filepath.Join(root, k.Path())
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil {
		t.Fatal(err)
	}
	if err := d.Delete(k); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	// The inode is gone once nothing holds it: a stat of it by handle is
	// not possible, so check that no descriptor of this process still
	// refers to a deleted file of the tier.
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err == nil && target == p+" (deleted)" {
			t.Fatalf("descriptor %s still holds the deleted %s after Close", e.Name(), p)
		}
	}
}
