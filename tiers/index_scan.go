package tiers

import (
	"maps"
	"slices"

	"github.com/ucmfs/ucmfs/hashdir"
)

// The index's operations over many entries: LRU order, eviction, listings
// by model and by shard, model removal.

// holds reports whether e is its key's recorded entry.
func (x *index) holds(e *entry) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return e.next != nil && x.lookupLocked(e.key()) == e
}

// attach sets the mapping of e if e is still recorded and has none; it
// reports false otherwise (the caller keeps the mapping).
func (x *index) attach(e *entry, b []byte) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	if e.next == nil || x.lookupLocked(e.key()) != e || e.hasMapping() {
		return false
	}
	e.setMapping(b)
	return true
}

// evictClean removes least recently used entries that are neither dirty
// nor pinned until capacity-used-reserved >= need or none is left, and
// returns them (the caller deletes their files and owns their mappings).
func (x *index) evictClean(need int64) []*entry {
	x.mu.Lock()
	defer x.mu.Unlock()
	var out []*entry
	for e := x.lru.prev; e != &x.lru && x.capacity-x.used-x.reserved < need; {
		prev := e.prev
		if !e.is(flagDirty) && !e.is(flagPinned) {
			x.deleteLocked(e)
			out = append(out, e)
		}
		e = prev
	}
	return out
}

// oldest returns up to n Infos, least recently used first.
func (x *index) oldest(n int) []Info {
	x.mu.Lock()
	defer x.mu.Unlock()
	out := make([]Info, 0, min(int64(n), x.files))
	for e := x.lru.prev; e != &x.lru && len(out) < n; e = e.prev {
		out = append(out, e.info())
	}
	return out
}

// list returns a snapshot of the Infos of model.
func (x *index) list(model string) []Info {
	x.mu.Lock()
	defer x.mu.Unlock()
	m := x.models[model]
	if m == nil {
		return nil
	}
	out := make([]Info, 0, m.files)
	for i := range m.shards {
		sh := &m.shards[i]
		for e := range sh.all() {
			out = append(out, e.info())
		}
	}
	return out
}

// shardKeys appends the keys of model in shard to keys.
func (x *index) shardKeys(model string, shard byte, keys []hashdir.Key) []hashdir.Key {
	x.mu.Lock()
	defer x.mu.Unlock()
	m := x.models[model]
	if m == nil {
		return keys
	}
	keys = slices.Grow(keys, m.shards[shard].len())
	for e := range m.shards[shard].all() {
		keys = append(keys, e.key())
	}
	return keys
}

// modelNames returns the models that have at least one entry, sorted.
func (x *index) modelNames() []string {
	x.mu.Lock()
	defer x.mu.Unlock()
	return slices.Sorted(maps.Keys(x.models))
}

// modelUsage returns the files and bytes of model.
func (x *index) modelUsage(model string) (files, bytes int64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if m := x.models[model]; m != nil {
		return m.files, m.bytes
	}
	return 0, 0
}

// rawWidths adds to widths the shard widths of which model has raw
// files, each once.
func (x *index) rawWidths(model string, widths []int) []int {
	x.mu.Lock()
	defer x.mu.Unlock()
	if m := x.models[model]; m != nil {
		for w, n := range m.raw {
			if n > 0 && !slices.Contains(widths, w) {
				widths = append(widths, w)
			}
		}
	}
	return widths
}

// modelCount returns the counts of model: all its entries, and those
// flagged dirty.
func (x *index) modelCount(model string) (all, dirty ModelCount) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if m := x.models[model]; m != nil {
		return ModelCount{Blocks: m.blocks, Files: m.files, Bytes: m.bytes}, m.dirty
	}
	return ModelCount{}, ModelCount{}
}

// each calls fn with snapshots of Infos, model by model, without holding
// the lock while fn runs; it stops when fn returns false. model "" means
// every model.
func (x *index) each(model string, fn func(Info) bool) {
	names := []string{model}
	if model == "" {
		names = x.modelNames()
	}
	for _, name := range names {
		for _, info := range x.list(name) {
			if !fn(info) {
				return
			}
		}
	}
}

// removeModel takes every entry of model out of the index and returns them.
func (x *index) removeModel(model string) []*entry {
	x.mu.Lock()
	defer x.mu.Unlock()
	m := x.models[model]
	if m == nil {
		return nil
	}
	out := make([]*entry, 0, m.files)
	for i := range m.shards {
		sh := &m.shards[i]
		for e := range sh.all() {
			out = append(out, e)
		}
	}
	for _, e := range out {
		x.deleteLocked(e)
	}
	return out
}

// drain empties the index and returns every entry (Close).
func (x *index) drain() []*entry {
	x.mu.Lock()
	defer x.mu.Unlock()
	out := make([]*entry, 0, x.files)
	for e := x.lru.next; e != &x.lru; e = e.next {
		out = append(out, e)
	}
	for _, e := range out {
		x.deleteLocked(e)
	}
	return out
}

// usage reports capacity, bytes and files.
func (x *index) usage() Usage {
	x.mu.Lock()
	defer x.mu.Unlock()
	return Usage{Capacity: x.capacity, Used: x.used, Files: x.files}
}

// room is capacity minus used bytes and bytes reserved by commits in flight.
func (x *index) room() int64 {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.capacity - x.used - x.reserved
}
