package store

import (
	"sync"
	"sync/atomic"

	"github.com/ucmfs/ucmfs/format"
)

// The counts of open blocks: reads per key (the hits xattr) and the
// files being written per key.

// hitsPruneAt is the size of the hit table past which the counts of keys
// no tier holds any more (evicted, removed elsewhere) are dropped.
const hitsPruneAt = 1 << 20

// hitTable counts opens for reading per key (the hits xattr).
type hitTable struct {
	mu      sync.Mutex
	n       map[format.Key]uint64
	limit   int         // prune when n grows past it
	pruning atomic.Bool // a prune runs
}

func (h *hitTable) init() {
	h.n = make(map[format.Key]uint64)
	h.limit = hitsPruneAt
}

// Hit counts an open of k for reading.
func (s *Store) Hit(k format.Key) {
	h := &s.hits
	h.mu.Lock()
	h.n[k]++
	full := len(h.n) > h.limit
	h.mu.Unlock()
	if full && h.pruning.CompareAndSwap(false, true) {
		go s.pruneHits()
	}
}

// pruneHits drops the counts of keys no tier holds.
func (s *Store) pruneHits() {
	h := &s.hits
	defer h.pruning.Store(false)
	h.mu.Lock()
	keys := make([]format.Key, 0, len(h.n))
	for k := range h.n {
		keys = append(keys, k)
	}
	h.mu.Unlock()
	var gone []format.Key
	for _, k := range keys {
		if !s.stack.Has(k) {
			gone = append(gone, k)
		}
	}
	h.mu.Lock()
	for _, k := range gone {
		delete(h.n, k)
	}
	h.limit = max(hitsPruneAt, 2*len(h.n))
	h.mu.Unlock()
}

func (h *hitTable) get(k format.Key) uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n[k]
}

// forget drops the counts of k, or of a whole model when k.Model is set
// and all is true.
func (h *hitTable) forget(k format.Key, all bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !all {
		delete(h.n, k)
		return
	}
	for key := range h.n {
		if key.Model == k.Model {
			delete(h.n, key)
		}
	}
}

// pendingSet counts the files being written per key, so a lookup of a
// name being written answers ENOENT without a negative cache entry: the
// name appears as soon as close publishes it. The epochs (256 buckets by
// id) move whenever a write of a key in the bucket ends, so a lookup that
// missed while a write ended also leaves nothing cached.
type pendingSet struct {
	mu     sync.Mutex
	n      map[format.Key]int
	epochs [256]uint64
}

func (p *pendingSet) init() { p.n = make(map[format.Key]int) }

func (p *pendingSet) epoch(k format.Key) uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.epochs[k.ID[15]]
}

func (p *pendingSet) add(k format.Key) {
	p.mu.Lock()
	p.n[k]++
	p.mu.Unlock()
}

func (p *pendingSet) done(k format.Key) {
	p.mu.Lock()
	if p.n[k]--; p.n[k] <= 0 {
		delete(p.n, k)
	}
	p.epochs[k.ID[15]]++
	p.mu.Unlock()
}

func (p *pendingSet) has(k format.Key) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n[k] > 0
}

// Hits is how many times k was opened for reading since the mount.
func (s *Store) Hits(k format.Key) uint64 { return s.hits.get(k) }

// ForgetHits drops the counts of k, or of k's whole model when all is set.
func (s *Store) ForgetHits(k format.Key, all bool) { s.hits.forget(k, all) }

// Started counts a file of k being written; Writes.Ended ends it.
func (ws Writes) Started(k format.Key) { ws.s.pending.add(k) }

// Ended ends a write Writes.Started counted, and moves k's epoch.
func (ws Writes) Ended(k format.Key) { ws.s.pending.done(k) }

// Active reports whether a file of k is being written.
func (ws Writes) Active(k format.Key) bool { return ws.s.pending.has(k) }

// Epoch is a number that moves whenever a write of a key that shares
// k's bucket ends: a miss taken while it moved must not be cached.
func (ws Writes) Epoch(k format.Key) uint64 { return ws.s.pending.epoch(k) }
