package store

import (
	"fmt"
	"testing"
	"time"

	"github.com/ucmfs/ucmfs/format"
)

// TestGensPruned: past its size, the generation table drops the entries
// of names no tier holds and of which the front end holds no node; the
// others keep their generation.
func TestGensPruned(t *testing.T) {
	s := newTestStore(t, Options{})
	s.gens.base = 10
	present, held := format.FileKey("e", "present.bin"), format.FileKey("e", "held.bin")
	if _, err := s.stack.Put(present, []byte("x"), false); err != nil {
		t.Fatal(err)
	}
	s.Writes().OnGenInUse(func(k format.Key, gen uint64) bool { return k == held && gen == 0 })
	s.bumpGen(present)
	s.bumpGen(held)
	for i := range 20 {
		s.bumpGen(format.FileKey("e", fmt.Sprintf("gone%d.bin", i)))
	}
	for end := time.Now().Add(10 * time.Second); s.gens.pruning.Load(); time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the prune the bumps started does not end")
		}
	}
	s.gens.mu.Lock()
	n := len(s.gens.m)
	s.gens.mu.Unlock()
	if n >= 22 {
		t.Fatalf("%d entries: no prune ran past the limit", n)
	}
	s.gens.pruning.Store(true)
	s.pruneGens() // the names bumped while the first prune ran
	s.gens.mu.Lock()
	n = len(s.gens.m)
	s.gens.mu.Unlock()
	if n != 2 {
		t.Fatalf("%d entries after the prune, want the 2 in use", n)
	}
	if s.Writes().Gen(present) != 1 || s.Writes().Gen(held) != 1 {
		t.Fatalf("kept entries: present %d, held %d; want 1 and 1", s.Writes().Gen(present), s.Writes().Gen(held))
	}
	if g := s.Writes().Gen(format.FileKey("e", "gone0.bin")); g != 0 {
		t.Fatalf("a gone name without nodes keeps generation %d", g)
	}
}
