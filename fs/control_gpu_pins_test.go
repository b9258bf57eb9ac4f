package fs

import (
	"errors"
	"testing"

	"github.com/ucmfs/ucmfs/store"
)

// TestLoadPins: loads pin a block while they run and leave the pin flag
// as the user set it; removals wait for the loads and hold new ones off.
func TestLoadPins(t *testing.T) {
	st := newTestStack(t)
	s := testState(t, st, Options{Logger: testLogger()})
	mem := st
	k, b := gpuBlock(1, 1000)
	put(t, st, k, b)

	if err := s.store.AcquirePin(k); err != nil {
		t.Fatal(err)
	}
	s.store.AcquirePin(k)
	s.store.ReleasePin(k)
	if !mem.Pinned(k) {
		t.Error("unpinned while a load still runs")
	}
	s.store.ReleasePin(k)
	if mem.Pinned(k) {
		t.Error("still pinned after the last load")
	}

	// The user's pin outlives a load; an unpin during one applies at its end.
	if err := s.store.SetUserPin(k, true); err != nil {
		t.Fatal(err)
	}
	s.store.AcquirePin(k)
	s.store.ReleasePin(k)
	if !mem.Pinned(k) {
		t.Error("a load dropped the user's pin")
	}
	s.store.AcquirePin(k)
	if err := s.store.SetUserPin(k, false); err != nil {
		t.Fatal(err)
	}
	if pinned, loading := s.store.UserPin(k); !mem.Pinned(k) || pinned || !loading {
		t.Errorf("unpin during a load: pinned %v, user's choice %v, loading %v", mem.Pinned(k), pinned, loading)
	}
	s.store.ReleasePin(k)
	if _, loading := s.store.UserPin(k); mem.Pinned(k) || loading {
		t.Error("the user's unpin was not applied when the load ended")
	}

	// A block on the directory tier only is promoted and pinned.
	if err := st.FlushAll(t.Context(), ""); err != nil {
		t.Fatal(err)
	}
	if err := st.Evict(k); err != nil {
		t.Fatal(err)
	}
	if err := s.store.AcquirePin(k); err != nil || !mem.Pinned(k) {
		t.Fatalf("pin of a block on nvme: %v", err)
	}

	// A removal waits until no load pins the block.
	seen := make(chan bool)
	go func() {
		done := s.store.Removal(k)
		_, loading := s.store.UserPin(k)
		done()
		seen <- loading
	}()
	s.store.ReleasePin(k)
	if <-seen {
		t.Error("a removal ran while a load pinned the block")
	}

	// A load waits while the block is being removed, then finds it gone.
	for _, remove := range []func() func(){
		func() func() { return s.store.Removal(k) },
		func() func() { return s.store.ModelRemoval(k.Model) },
	} {
		if !st.Has(k) {
			put(t, st, k, b)
		}
		done := remove()
		got := make(chan error)
		go func() { got <- s.store.AcquirePin(k) }()
		if err := st.Remove(k); err != nil {
			t.Fatal(err)
		}
		done()
		if err := <-got; !errors.Is(err, store.ErrNotFound) {
			t.Errorf("a load during a removal: %v, want ErrNotFound", err)
		}
	}
	if err := s.store.AcquirePin(k); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("pin of a removed block: %v", err)
	}
}
