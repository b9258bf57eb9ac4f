package tiers

import (
	"fmt"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/tiers/index"
)

// Pins and mappings: a block is pinned in the memory tier (never evicted)
// while a user asks for it (user.ucm.pinned) or a GPU load reads its
// mapping; the mapping is the memory tier's read-only, possibly
// registered, view of the file (MemConfig.Host).

// Pin keeps k in memory (promoting it first) or releases it: a user's
// pin, bounded by MemConfig.MaxPinned (mem.Tier.PinWithin).
func (s *Stack) Pin(k format.Key, pinned bool) error {
	if !pinned {
		return s.SetPinned(k, false)
	}
	if err := s.Promote(k); err != nil {
		return err
	}
	mu := s.keyLock(k)
	mu.Lock()
	defer mu.Unlock()
	return s.mem.PinWithin(k)
}

// SetPinned sets or clears the pin of k's copy in the memory tier,
// without promoting it: ErrNotFound when memory does not hold k (a block
// evicted between a Promote and this call).
func (s *Stack) SetPinned(k format.Key, pinned bool) error {
	mu := s.keyLock(k)
	mu.Lock()
	defer mu.Unlock()
	return s.mem.SetPinned(k, pinned)
}

// Pinned reports whether k is pinned in the memory tier (false if memory
// does not hold it).
func (s *Stack) Pinned(k format.Key) bool { return s.mem.Pinned(k) }

// Mapping returns the memory tier's read-only mapping of k's file, or nil
// when it has none (not in memory, past the mapping budget, or not mapped
// yet); see mem.Tier.Mapping. It stays valid while k is pinned and not
// removed: pin k first (SetPinned or Pin).
func (s *Stack) Mapping(k format.Key) []byte { return s.mem.Mapping(k) }

// Touch marks k's copy in the memory tier as just used (its LRU order),
// for a reader that used its Mapping rather than Open.
func (s *Stack) Touch(k format.Key) { s.mem.Touch(k) }

// Evict drops k's copy from the memory tier when a persistent tier holds
// it too and it is not pinned, so that it is read from there next.
// ErrNotFound when memory does not hold k; an error when the memory copy
// is the only one or is pinned.
func (s *Stack) Evict(k format.Key) error {
	mu := s.keyLock(k)
	mu.Lock()
	defer mu.Unlock()
	e, ok := s.mem.Index().Get(k)
	pinned, dirty := e.Is(index.Pinned), e.Is(index.Dirty)
	switch {
	case !ok:
		return fmt.Errorf("evict %s: %w", k, ErrNotFound)
	case pinned:
		return fmt.Errorf("evict %s: pinned in memory", k)
	case dirty || !s.inDirs(k):
		return fmt.Errorf("evict %s: memory holds the only copy", k)
	}
	if err := s.mem.Remove(k); err != nil {
		return err
	}
	s.signalRoom()
	return nil
}

// SetPinRule makes every file that enters the memory tier from then on,
// and that rule holds for, enter pinned (the store's: the files beneath
// a pinned directory of a files model). rule runs under the memory
// tier's index lock: it must not block or call the stack.
func (s *Stack) SetPinRule(rule func(format.Key) bool) { s.mem.Index().SetPinRule(rule) }
