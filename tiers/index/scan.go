package index

import (
	"iter"
	"maps"
	"slices"

	"github.com/ucmfs/ucmfs/format"
)

// The index's operations over many entries: LRU order, eviction, listings
// by model and by shard, model removal.

// Holds reports whether e is its key's recorded entry.
func (x *Index) Holds(e *Entry) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return e.next != nil && x.lookupLocked(e.Key()) == e
}

// Attach sets the mapping of e if e is still recorded and has none; it
// reports false otherwise (the caller keeps the mapping).
func (x *Index) Attach(e *Entry, b []byte) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	if e.next == nil || x.lookupLocked(e.Key()) != e || e.HasMapping() {
		return false
	}
	e.SetMapping(b)
	return true
}

// EvictClean removes least recently used entries that are neither dirty
// nor pinned until Room() >= need or none is left, and
// returns them (the caller deletes their files and owns their mappings).
func (x *Index) EvictClean(need int64) []*Entry {
	x.mu.Lock()
	defer x.mu.Unlock()
	var out []*Entry
	need = x.cost(need)
	for e := x.lru.prev; e != &x.lru && x.roomLocked() < need; {
		prev := e.prev
		if !e.Is(Dirty) && !e.Is(Pinned) {
			x.deleteLocked(e)
			out = append(out, e)
		}
		e = prev
	}
	return out
}

// Oldest returns copies of up to n entries, least recently used first.
func (x *Index) Oldest(n int) []Entry {
	x.mu.Lock()
	defer x.mu.Unlock()
	out := make([]Entry, 0, min(int64(n), x.files))
	for e := x.lru.prev; e != &x.lru && len(out) < n; e = e.prev {
		out = append(out, e.snapshot())
	}
	return out
}

// list returns copies of the entries of model.
func (x *Index) list(model string) []Entry {
	x.mu.Lock()
	defer x.mu.Unlock()
	m := x.models[model]
	if m == nil {
		return nil
	}
	out := make([]Entry, 0, m.files)
	for i := range m.shards {
		sh := &m.shards[i]
		for e := range sh.all() {
			out = append(out, e.snapshot())
		}
	}
	return out
}

// ShardKeys appends the keys of model in shard to keys.
func (x *Index) ShardKeys(model string, shard byte, keys []format.Key) []format.Key {
	x.mu.Lock()
	defer x.mu.Unlock()
	m := x.models[model]
	if m == nil {
		return keys
	}
	keys = slices.Grow(keys, m.shards[shard].len())
	for e := range m.shards[shard].all() {
		keys = append(keys, e.Key())
	}
	return keys
}

// LockedShard calls fn under the index's lock with the files of model
// in shard, their keys and sizes (none where it holds none): no file
// enters or leaves the index while fn runs, so what the observer is told
// of a file comes wholly before or after it. fn must not block or call
// the index.
func (x *Index) LockedShard(model string, shard byte, fn func(files iter.Seq2[format.Key, int64])) {
	x.mu.Lock()
	defer x.mu.Unlock()
	m := x.models[model]
	fn(func(yield func(format.Key, int64) bool) {
		if m == nil {
			return
		}
		for e := range m.shards[shard].all() {
			if !yield(e.Key(), e.Size) {
				return
			}
		}
	})
}

// DirtyShardKeys returns the keys of model whose id starts with the byte
// shard and whose entries are Dirty. It looks at the flags of the shard's
// entries and builds only the keys it returns.
func (x *Index) DirtyShardKeys(model string, shard byte) []format.Key {
	x.mu.Lock()
	defer x.mu.Unlock()
	m := x.models[model]
	if m == nil {
		return nil
	}
	var keys []format.Key
	for e := range m.shards[shard].all() {
		if e.Is(Dirty) {
			keys = append(keys, e.Key())
		}
	}
	return keys
}

// ModelNames returns the models that have at least one Entry, sorted.
func (x *Index) ModelNames() []string {
	x.mu.Lock()
	defer x.mu.Unlock()
	return slices.Sorted(maps.Keys(x.models))
}

// ModelUsage returns the files and bytes of model.
func (x *Index) ModelUsage(model string) (files, bytes int64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if m := x.models[model]; m != nil {
		return m.files, m.bytes
	}
	return 0, 0
}

// RawWidths adds to widths the shard widths of which model has raw
// files, each once.
func (x *Index) RawWidths(model string, widths []int) []int {
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

// ModelCount returns the counts of model: all its entries, and those
// flagged dirty.
func (x *Index) ModelCount(model string) (all, dirty Count) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if m := x.models[model]; m != nil {
		return Count{Blocks: m.blocks, Files: m.files, Bytes: m.bytes}, m.dirty
	}
	return Count{}, Count{}
}

// Each calls fn with copies of the entries, model by model, without
// holding the lock while fn runs; it stops when fn returns false. model
// "" means every model.
func (x *Index) Each(model string, fn func(*Entry) bool) {
	names := []string{model}
	if model == "" {
		names = x.ModelNames()
	}
	for _, name := range names {
		es := x.list(name)
		for i := range es {
			if !fn(&es[i]) {
				return
			}
		}
	}
}

// RemoveModel takes every Entry of model out of the index and returns them.
func (x *Index) RemoveModel(model string) []*Entry {
	x.mu.Lock()
	defer x.mu.Unlock()
	m := x.models[model]
	if m == nil {
		return nil
	}
	out := make([]*Entry, 0, m.files)
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

// Drain empties the index and returns every Entry (Close).
func (x *Index) Drain() []*Entry {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.observe = nil
	out := make([]*Entry, 0, x.files)
	for e := x.lru.next; e != &x.lru; e = e.next {
		out = append(out, e)
	}
	for _, e := range out {
		x.deleteLocked(e)
	}
	return out
}

// Usage is an index's capacity and use, in bytes of file content (the
// same fields as tiers.Usage, which converts from it).
type Usage struct {
	Capacity int64 // the most the tier may hold
	Used     int64 // bytes of published files
	Charged  int64 // what they take of the capacity (Used, or more with a unit: SetUnit)
	Files    int64 // number of published files
	MaxFiles int64 // the most files it may hold (0: no bound; SetMaxFiles)
	Pinned   int64 // what pinned files take of the capacity
}

// Usage reports capacity, bytes and files.
func (x *Index) Usage() Usage {
	x.mu.Lock()
	defer x.mu.Unlock()
	return Usage{Capacity: x.capacity, Used: x.used, Charged: x.charged, Files: x.files, MaxFiles: x.maxFiles, Pinned: x.pinned}
}

// Room is capacity minus what the files take (Charged) and bytes reserved
// by commits in flight; at most -1 while the tier holds its most files
// (SetMaxFiles), so that a commit of any size makes room first.
func (x *Index) Room() int64 {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.roomLocked()
}

// EachShard calls fn for each of the 256 shards of model, in order, with
// the number of its entries and the entries themselves, under the index's
// lock: fn must not call the index. Nothing is called for a model with
// no entry.
func (x *Index) EachShard(model string, fn func(hh byte, n int, entries iter.Seq[*Entry])) {
	x.mu.Lock()
	defer x.mu.Unlock()
	m := x.models[model]
	if m == nil {
		return
	}
	for hh := range m.shards {
		sh := &m.shards[hh]
		fn(byte(hh), sh.len(), sh.all())
	}
}
