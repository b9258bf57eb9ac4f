package store

import (
	"errors"
	"fmt"
	"sync"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/tiers"
)

// Pins of GPU loads.
//
// A load copies a block from its memory-tier mapping (MemTier.Mapping),
// which is unmapped when the block leaves the memory tier. So while a
// load runs, its blocks are pinned (no eviction), and an unlink of one of
// them, or an rm -r of its model, waits until the load is done (no
// Removal). The memory tier's pin flag is one bit, which the user's
// user.ucm.pinned attribute sets too; loadPins counts the loads of each
// key and keeps the user's choice aside while any runs, to apply it when
// the last one ends.
//
// Invariants, under mu: a key in loads is in the memory tier and pinned
// there; no key is in loads while it, or its model, is being removed.
// mu is held while the pin flag changes (a call into the memory tier, or
// Stack.Pin for the attribute), never while a block is copied.
type loadPins struct {
	mu       sync.Mutex
	cond     sync.Cond // signalled when a load ends or a removal ends
	loads    map[format.Key]*pinEntry
	removing map[format.Key]int // keys being removed
	models   map[string]int     // models being removed
}

// pinEntry is one key pinned by loads.
type pinEntry struct {
	loads int  // loads in flight
	keep  bool // the pin flag to leave when the last load ends
}

func (p *loadPins) init() {
	p.cond.L = &p.mu
	p.loads = make(map[format.Key]*pinEntry)
	p.removing = make(map[format.Key]int)
	p.models = make(map[string]int)
}

// blocked reports whether k or its model is being removed (under mu).
func (p *loadPins) blocked(k format.Key) bool {
	return p.removing[k] > 0 || p.models[k.Model] > 0
}

// pinRetries bounds the promote-then-pin attempts of one key: a block
// evicted between its promotion and its pin is promoted again.
const pinRetries = 3

// AcquirePin brings block k into the memory tier (tiers.Stack.Promote)
// and pins it there for a load; releasePin undoes it. It waits while k
// or its model is being removed. Errors: tiers.ErrNotFound (no tier holds
// k), tiers.ErrFull (memory cannot take it), others from the stack.
func (s *Store) AcquirePin(k format.Key) error {
	p := &s.pins
	for range pinRetries {
		if err := s.stack.Promote(k); err != nil {
			return err
		}
		p.mu.Lock()
		for p.blocked(k) {
			p.cond.Wait()
		}
		if e := p.loads[k]; e != nil {
			e.loads++
			p.mu.Unlock()
			return nil
		}
		keep := s.stack.Pinned(k)
		err := s.stack.SetPinned(k, true)
		if err == nil {
			p.loads[k] = &pinEntry{loads: 1, keep: keep}
		}
		p.mu.Unlock()
		if !errors.Is(err, tiers.ErrNotFound) {
			return err
		}
	}
	return fmt.Errorf("%s: evicted from memory while being pinned, %d times: %w", k, pinRetries, tiers.ErrFull)
}

// ReleasePin ends one load's pin of k; the last one leaves the pin flag
// as the user set it.
func (s *Store) ReleasePin(k format.Key) {
	p := &s.pins
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.loads[k]
	if e == nil {
		return
	}
	if e.loads--; e.loads > 0 {
		return
	}
	delete(p.loads, k)
	if !e.keep {
		if err := s.stack.SetPinned(k, false); err != nil && !errors.Is(err, tiers.ErrNotFound) {
			s.log.Warn("gpu load: unpinning", "key", k.String(), "err", err)
		}
	}
	p.cond.Broadcast()
}

// SetUserPin applies user.ucm.pinned: pin keeps k in memory (promoting
// it first), unpin lets it go. While loads pin k, the choice is kept
// aside and applied when the last one ends.
func (s *Store) SetUserPin(k format.Key, pin bool) error {
	if pin {
		if err := s.stack.Promote(k); err != nil {
			return err
		}
	}
	p := &s.pins
	p.mu.Lock()
	defer p.mu.Unlock()
	if e := p.loads[k]; e != nil {
		e.keep = pin
		return nil
	}
	return s.stack.Pin(k, pin)
}

// UserPin is the pin flag the user chose for k while loads pin it; ok is
// false when no load does (the memory tier's flag is the answer then).
func (s *Store) UserPin(k format.Key) (pinned, ok bool) {
	p := &s.pins
	p.mu.Lock()
	defer p.mu.Unlock()
	if e := p.loads[k]; e != nil {
		return e.keep, true
	}
	return false, false
}

// Removal waits until no load pins k, then keeps new loads of k waiting
// until the returned function is called: around a removal of k.
func (s *Store) Removal(k format.Key) (done func()) {
	p := &s.pins
	p.mu.Lock()
	for p.loads[k] != nil {
		p.cond.Wait()
	}
	p.removing[k]++
	p.mu.Unlock()
	return func() {
		p.mu.Lock()
		if p.removing[k]--; p.removing[k] == 0 {
			delete(p.removing, k)
		}
		p.cond.Broadcast()
		p.mu.Unlock()
	}
}

// ModelRemoval is removal for every block of model.
func (s *Store) ModelRemoval(model string) (done func()) {
	p := &s.pins
	p.mu.Lock()
	for p.pinsModel(model) {
		p.cond.Wait()
	}
	p.models[model]++
	p.mu.Unlock()
	return func() {
		p.mu.Lock()
		if p.models[model]--; p.models[model] == 0 {
			delete(p.models, model)
		}
		p.cond.Broadcast()
		p.mu.Unlock()
	}
}

// pinsModel reports whether a load pins a block of model (under mu).
func (p *loadPins) pinsModel(model string) bool {
	for k := range p.loads {
		if k.Model == model {
			return true
		}
	}
	return false
}
