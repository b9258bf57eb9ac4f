package tiers

import (
	"context"
	"errors"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestRemoveWhileTierDownIsNotDone (soak seed 1796638164599371838): a
// removal of a name the directory tier holds while that tier is Down (a
// write failed with EIO) fails, and the name is there when the tier is
// back; with the name in memory too, and in the tier alone. It answered
// done when memory held the name (and the tier's file came back with
// the tier: the soak's "back"), and not found when it did not (the
// soak's "gone"), the file still on the tier.
func TestRemoveWhileTierDownIsNotDone(t *testing.T) {
	for _, inMemory := range []bool{true, false} {
		disk, dc := crashDir(t)
		dc.ProbeInterval = 5 * time.Millisecond // a tier down comes back soon
		s := buildStack(t, StackConfig{DirtyExpire: time.Hour}, MemConfig{Capacity: 8 << 20}, dc)
		k, data := testBlock("m", 1, 1000)
		if _, err := s.Put(k, data, true); err != nil {
			t.Fatal(err)
		}
		if !inMemory {
			if err := s.Evict(k); err != nil {
				t.Fatal(err)
			}
		}
		disk.FailAt(1, "open", unix.EIO) // the next write-back's temp file
		other, od := testBlock("m", 2, 1000)
		if _, err := s.Put(other, od, true); !errors.Is(err, unix.EIO) {
			t.Fatalf("durable put onto a failing tier: %v, want EIO", err)
		}
		if h := s.dirs[0].Health(); h != Down {
			t.Fatalf("tier %v after a write failed with EIO, want down", h)
		}
		err := s.Remove(k)
		if err == nil || errors.Is(err, ErrNotFound) {
			t.Errorf("in memory %v: remove while the tier holding it is down: %v, want it to fail", inMemory, err)
		}
		for deadline := time.Now().Add(10 * time.Second); s.dirs[0].Health() == Down; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the probe did not bring the tier back")
			}
		}
		if _, serr := s.Stat(k); serr != nil {
			t.Fatalf("in memory %v: %s after the failed removal: %v, want it there", inMemory, k, serr)
		}
		if err := s.Remove(k); err != nil {
			t.Fatalf("remove once the tier is back: %v", err)
		}
		if _, err := s.Open(k); !errors.Is(err, ErrNotFound) {
			t.Fatalf("open after the removal: %v, want not found", err)
		}
	}
}

// TestNoTierOperationAfterClose: a Writer of a directory tier used after
// the stack's Close is refused, and the clean-up of its temp file,
// which runs in the background, does not act on the directory after the
// Close: the next start removes the temp file. It unlinked it after the
// Close (the soak met such an unlink in a directory the next stack over
// the same disk had opened, seed 1796649779445888009).
func TestNoTierOperationAfterClose(t *testing.T) {
	s, disk := crashStack(t, StackConfig{})
	k, data := testBlock("m", 1, 1000)
	w, err := s.dirs[0].Create(k)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Commit(CommitOptions{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("commit after the close: %v, want ErrClosed", err)
	}
	dirTier(s, 0).WaitCleanups()
	if late := disk.Late(); len(late) > 0 {
		t.Fatalf("the tier directory was used after the close: %q", late)
	}
}
