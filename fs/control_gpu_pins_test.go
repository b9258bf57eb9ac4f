package fs

import (
	"errors"
	"testing"

	"github.com/ucmfs/ucmfs/tiers"
)

// TestLoadPins: loads pin a block while they run and leave the pin flag
// as the user set it; removals wait for the loads and hold new ones off.
func TestLoadPins(t *testing.T) {
	st := newTestStack(t)
	s := newState(st, Options{Logger: testLogger()})
	mem := st.Mem()
	k, b := gpuBlock(1, 1000)
	put(t, st, k, b)

	if err := s.acquirePin(k); err != nil {
		t.Fatal(err)
	}
	s.acquirePin(k)
	s.releasePin(k)
	if !mem.Pinned(k) {
		t.Error("unpinned while a load still runs")
	}
	s.releasePin(k)
	if mem.Pinned(k) {
		t.Error("still pinned after the last load")
	}

	// The user's pin outlives a load; an unpin during one applies at its end.
	if err := s.setUserPin(k, true); err != nil {
		t.Fatal(err)
	}
	s.acquirePin(k)
	s.releasePin(k)
	if !mem.Pinned(k) {
		t.Error("a load dropped the user's pin")
	}
	s.acquirePin(k)
	if err := s.setUserPin(k, false); err != nil {
		t.Fatal(err)
	}
	if pinned, loading := s.userPin(k); !mem.Pinned(k) || pinned || !loading {
		t.Errorf("unpin during a load: pinned %v, user's choice %v, loading %v", mem.Pinned(k), pinned, loading)
	}
	s.releasePin(k)
	if _, loading := s.userPin(k); mem.Pinned(k) || loading {
		t.Error("the user's unpin was not applied when the load ended")
	}

	// A block on the directory tier only is promoted and pinned.
	if err := st.FlushAll(t.Context(), ""); err != nil {
		t.Fatal(err)
	}
	if err := mem.Remove(k); err != nil {
		t.Fatal(err)
	}
	if err := s.acquirePin(k); err != nil || !mem.Pinned(k) {
		t.Fatalf("pin of a block on nvme: %v", err)
	}

	// A removal waits until no load pins the block.
	seen := make(chan bool)
	go func() {
		done := s.removal(k)
		_, loading := s.userPin(k)
		done()
		seen <- loading
	}()
	s.releasePin(k)
	if <-seen {
		t.Error("a removal ran while a load pinned the block")
	}

	// A load waits while the block is being removed, then finds it gone.
	for _, remove := range []func() func(){
		func() func() { return s.removal(k) },
		func() func() { return s.modelRemoval(k.Model) },
	} {
		if !st.Has(k) {
			put(t, st, k, b)
		}
		done := remove()
		got := make(chan error)
		go func() { got <- s.acquirePin(k) }()
		if err := st.Remove(k); err != nil {
			t.Fatal(err)
		}
		done()
		if err := <-got; !errors.Is(err, tiers.ErrNotFound) {
			t.Errorf("a load during a removal: %v, want ErrNotFound", err)
		}
	}
	if err := s.acquirePin(k); !errors.Is(err, tiers.ErrNotFound) {
		t.Errorf("pin of a removed block: %v", err)
	}
}
