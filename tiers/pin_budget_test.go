package tiers

import (
	"errors"
	"fmt"
	"testing"

	"github.com/ucmfs/ucmfs/format"
)

// TestPinBudget: users' pins keep at most MaxPinned (half the memory
// tier by default) in memory: past it a pin is ErrFull, and the other
// half takes new blocks; the pin rule (a pinned directory) lets a file in
// unpinned past it. A GPU load's pin (SetPinned) is not bounded.
func TestPinBudget(t *testing.T) {
	const block = 512 << 10
	s := buildStack(t, StackConfig{}, MemConfig{Capacity: 4 << 20}, DirConfig{Kind: "nvme", Dir: t.TempDir()})
	key := func(i int) format.Key { return format.FileKey("e", fmt.Sprintf("b%d.bin", i)) }
	data := make([]byte, block)
	pinned := 0
	for i := range 8 {
		if _, err := s.Put(key(i), data, true); err != nil {
			t.Fatal(err)
		}
		err := s.Pin(key(i), true)
		switch {
		case err == nil:
			pinned++
		case !errors.Is(err, ErrFull):
			t.Fatalf("pin %d: %v", i, err)
		}
	}
	if pinned != 4 || s.mem.Index().Pinned() != 2<<20 {
		t.Fatalf("%d pins of 512 KiB kept %d bytes, want 4 and half of 4 MiB", pinned, s.mem.Index().Pinned())
	}
	for i := 8; i < 24; i++ { // 8 MiB more: the unpinned half takes them
		if _, err := s.Put(key(i), data, true); err != nil {
			t.Fatal(err)
		}
		if !s.mem.Index().Has(key(i)) {
			t.Fatalf("block %d went past memory with half of it unpinned", i)
		}
	}
	if st := s.Stats(); st.RoomWaits != 0 || st.DirectWrites != 0 {
		t.Fatalf("room waits %d, direct writes %d: want none", st.RoomWaits, st.DirectWrites)
	}
	s.SetPinRule(func(format.Key) bool { return true })
	if _, err := s.Put(key(24), data, true); err != nil {
		t.Fatal(err)
	}
	if s.Pinned(key(24)) {
		t.Fatal("the pin rule pinned a file past the budget")
	}
	s.SetPinRule(nil)
	if err := s.SetPinned(key(24), true); err != nil {
		t.Fatalf("a load's pin past the budget: %v", err)
	}
	if err := s.Pin(key(0), false); err != nil {
		t.Fatal(err)
	}
	if err := s.Pin(key(7), true); !errors.Is(err, ErrFull) {
		t.Fatalf("a pin while a load's pin takes the room one unpin gave: %v", err)
	}
	if err := s.SetPinned(key(24), false); err != nil {
		t.Fatal(err)
	}
	if err := s.Pin(key(7), true); err != nil {
		t.Fatalf("a pin after an unpin: %v", err)
	}
}

// TestFullOfPinsNoWait: a memory tier full of pinned blocks, none dirty,
// has nothing write-back could free: a new block goes to the next tier
// at once, without waiting RoomWait for room that never comes (each
// write of another user waited 10 s behind one user's pins).
func TestFullOfPinsNoWait(t *testing.T) {
	const block = 512 << 10
	s := buildStack(t, StackConfig{}, MemConfig{Capacity: 2 << 20}, DirConfig{Kind: "nvme", Dir: t.TempDir()})
	data := make([]byte, block)
	for i := range 4 {
		k := format.FileKey("e", fmt.Sprintf("p%d.bin", i))
		if _, err := s.Put(k, data, true); err != nil {
			t.Fatal(err)
		}
		if err := s.SetPinned(k, true); err != nil {
			t.Fatal(err)
		}
	}
	k := format.FileKey("e", "new.bin")
	if _, err := s.Put(k, data, true); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.RoomWaits != 0 || st.DirectWrites != 1 {
		t.Fatalf("room waits %d, direct writes %d: want 0 and 1", st.RoomWaits, st.DirectWrites)
	}
	mustEqual(t, "new block", readAll(t, s, k), data)
}
