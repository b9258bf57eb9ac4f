package store

import (
	"sync"
	"sync/atomic"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/layout/registry"
)

// genTable counts, per File published again under its name this run, the
// times it was replaced (a publish over it) or moved away (a rename): a
// front end numbers each version's node apart, so that a node the kernel
// still holds of an earlier version (open, or moved to the new name) is
// never taken for the new file. Only such Files have an entry.
//
// An entry outlives its File, since the kernel may hold nodes of its
// versions after it is gone; but a name moved away once takes an entry
// for good, and a user who renames files of new names in a loop would
// grow the table without bound. So past genPruneAt entries, those of
// names no tier holds and whose versions have no node the front end
// holds (Writes.OnGenInUse) are dropped: such a name's next file is version 0
// again, which nothing can be confused with.
type genTable struct {
	mu      sync.Mutex
	m       map[format.Key]uint64
	base    int         // the size to prune at (0: genPruneAt)
	limit   int         // prune when m grows past it (base, or twice what a prune kept)
	pruning atomic.Bool // a prune runs
	inUse   atomic.Pointer[func(format.Key, uint64) bool]
}

// genPruneAt is the size of the generation table past which the entries
// of gone names are dropped.
const genPruneAt = 1 << 20

// bump counts one more version of k; it reports whether the table grew
// past its limit and no prune runs (the caller starts one).
func (g *genTable) bump(k format.Key) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.m == nil {
		g.m = make(map[format.Key]uint64)
	}
	g.m[k]++
	return len(g.m) > max(g.limit, g.pruneAt()) && g.pruning.CompareAndSwap(false, true)
}

// pruneAt is the size to prune at (under mu).
func (g *genTable) pruneAt() int {
	if g.base > 0 {
		return g.base
	}
	return genPruneAt
}

// bumpGen counts one more version of the File k, and prunes the table in
// the background when it grew past its limit.
func (s *Store) bumpGen(k format.Key) {
	if s.gens.bump(k) {
		go s.pruneGens()
	}
}

// EndVersion counts the version of the File k as ended by its removal
// (an unlink) while the front end has it open: the kernel keeps the open
// file's node, and a file published under the name again must not be
// taken for it (it would be served the old bytes). A removal of a file
// nobody has open needs none: the kernel drops its node, and the next
// file of the name is version 0 again, as after a prune.
func (ws Writes) EndVersion(k format.Key) {
	if registry.Of(k).Replaces() {
		ws.s.bumpGen(k)
	}
}

// OnGenInUse tells the store how to ask the front end whether it holds a
// node of version gen of the File k. Without it, no entry is pruned.
func (ws Writes) OnGenInUse(fn func(k format.Key, gen uint64) bool) { ws.s.gens.inUse.Store(&fn) }

// pruneGens drops the entries of names no tier holds and of which no
// version has a node.
func (s *Store) pruneGens() {
	g := &s.gens
	defer g.pruning.Store(false)
	inUse := g.inUse.Load()
	if inUse == nil {
		return
	}
	g.mu.Lock()
	snap := make(map[format.Key]uint64, len(g.m))
	for k, n := range g.m {
		snap[k] = n
	}
	g.mu.Unlock()
	var gone []format.Key
	for k, n := range snap {
		if s.stack.Has(k) || versionsInUse(*inUse, k, n) {
			continue
		}
		gone = append(gone, k)
	}
	g.mu.Lock()
	for _, k := range gone {
		if g.m[k] == snap[k] { // not bumped meanwhile
			delete(g.m, k)
		}
	}
	g.limit = max(g.pruneAt(), 2*len(g.m))
	g.mu.Unlock()
}

// versionsInUse reports whether the front end holds a node of any
// version 0..n of k.
func versionsInUse(inUse func(format.Key, uint64) bool, k format.Key, n uint64) bool {
	for gen := uint64(0); gen <= n; gen++ {
		if inUse(k, gen) {
			return true
		}
	}
	return false
}

// Gen is the generation of the File k: 0 until it is first replaced
// or moved away this run, then one more at each.
func (ws Writes) Gen(k format.Key) uint64 {
	ws.s.gens.mu.Lock()
	defer ws.s.gens.mu.Unlock()
	return ws.s.gens.m[k]
}
