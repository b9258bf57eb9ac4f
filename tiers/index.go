package tiers

import (
	"container/list"
	"sort"
	"sync"
)

// The index is the in-memory record of what one tier holds: one entry per
// published file, an LRU order by the daemon's own accesses (never atime),
// exact byte accounting, and the files of each model. Both tiers use it.
//
// Lock order: index.mu is a leaf lock. Nothing else is locked and no
// filesystem call is made while it is held; callers take their own locks
// (MemTier.life, writer mutexes) before calling into the index, never the
// other way round.
//
// Invariants, under index.mu:
//   - entries, models and lru hold the same set of entries;
//   - used is the sum of entries' sizes, files their count;
//   - reserved is the sum of sizes of commits in flight (reserve called,
//     add or unreserve not yet);
//   - reserve never lets used+reserved exceed capacity, so a tier whose
//     files all arrive through reserve never holds more than capacity.
//     Files adopted from disk (adopt) are counted even past capacity: they
//     exist, and honest accounting lets the stack evict them.

// entry is the record of one published file.
type entry struct {
	info   Info
	seq    uint64        // access sequence number: higher is more recent
	pinned bool          // keep in the tier (MemTier)
	dirty  bool          // not yet on a persistent tier (MemTier)
	elem   *list.Element // in index.lru; Value is the *entry
	// mapping is the MemTier's locked read-only mapping of the file, or
	// nil. Once an entry leaves the index its remover owns the mapping.
	mapping []byte
	// crcRead is set when info.CRC/HasCRC are final: given at commit or
	// read from the file's xattr (DirTier). Entries rebuilt from a
	// directory listing start without it.
	crcRead bool
}

// modelSet is the entries of one model.
type modelSet struct {
	entries map[Key]*entry
	bytes   int64
}

// index is a concurrency-safe map of Key to entry; see the file comment.
type index struct {
	mu       sync.Mutex
	entries  map[Key]*entry
	models   map[string]*modelSet
	lru      list.List // front: most recently used
	seq      uint64
	capacity int64
	used     int64
	reserved int64
}

// newIndex returns an empty index of the given capacity in bytes.
func newIndex(capacity int64) *index {
	return &index{
		entries:  make(map[Key]*entry),
		models:   make(map[string]*modelSet),
		capacity: capacity,
	}
}

// setCapacity changes the capacity (DirTier sizes itself after a rebuild).
func (x *index) setCapacity(c int64) {
	x.mu.Lock()
	x.capacity = c
	x.mu.Unlock()
}

// reserve claims size bytes for a commit in flight. It reports false, and
// claims nothing, when used+reserved+size would exceed the capacity.
func (x *index) reserve(size int64) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	if size < 0 || x.used+x.reserved+size > x.capacity {
		return false
	}
	x.reserved += size
	return true
}

// unreserve gives back a reservation whose commit did not publish.
func (x *index) unreserve(size int64) {
	x.mu.Lock()
	x.reserved -= size
	x.mu.Unlock()
}

// add records a file published after reserve(e.info.Size), turning the
// reservation into use. If the key is already recorded (a racing adopt),
// the reservation is given back, the recorded entry is kept and add
// reports false with the recorded Info.
func (x *index) add(e *entry) (Info, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.reserved -= e.info.Size
	if old, ok := x.entries[e.info.Key]; ok {
		return old.info, false
	}
	x.insertLocked(e)
	return e.info, true
}

// adopt records a file found on disk without a reservation (rebuild, or a
// file another daemon published in a shared directory). It reports false
// if the key was already recorded.
func (x *index) adopt(e *entry) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	if _, ok := x.entries[e.info.Key]; ok {
		return false
	}
	x.insertLocked(e)
	return true
}

func (x *index) insertLocked(e *entry) {
	x.seq++
	e.seq = x.seq
	e.elem = x.lru.PushFront(e)
	x.entries[e.info.Key] = e
	m := x.models[e.info.Key.Model]
	if m == nil {
		m = &modelSet{entries: make(map[Key]*entry)}
		x.models[e.info.Key.Model] = m
	}
	m.entries[e.info.Key] = e
	m.bytes += e.info.Size
	x.used += e.info.Size
}

func (x *index) deleteLocked(e *entry) {
	x.lru.Remove(e.elem)
	e.elem = nil
	delete(x.entries, e.info.Key)
	if m := x.models[e.info.Key.Model]; m != nil {
		delete(m.entries, e.info.Key)
		m.bytes -= e.info.Size
		if len(m.entries) == 0 {
			delete(x.models, e.info.Key.Model)
		}
	}
	x.used -= e.info.Size
}

// get returns the Info of key and whether its CRC fields are final.
func (x *index) get(key Key) (info Info, crcRead, ok bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	e, ok := x.entries[key]
	if !ok {
		return Info{}, false, false
	}
	return e.info, e.crcRead, true
}

// setCRC records the CRC read lazily for key (if it is still recorded).
func (x *index) setCRC(key Key, crc uint32, has bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if e, ok := x.entries[key]; ok && !e.crcRead {
		e.info.CRC, e.info.HasCRC, e.crcRead = crc, has, true
	}
}

// remove takes key out of the index and returns its entry, whose mapping
// the caller now owns.
func (x *index) remove(key Key) (*entry, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	e, ok := x.entries[key]
	if !ok {
		return nil, false
	}
	x.deleteLocked(e)
	return e, true
}

// touch marks key as just used. It reports whether key is recorded.
func (x *index) touch(key Key) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	e, ok := x.entries[key]
	if !ok {
		return false
	}
	x.seq++
	e.seq = x.seq
	x.lru.MoveToFront(e.elem)
	return true
}

// setFlags sets the dirty or pinned flag of key; it reports false if the
// key is not recorded.
func (x *index) setFlags(key Key, set func(*entry)) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	e, ok := x.entries[key]
	if ok {
		set(e)
	}
	return ok
}

// flags returns the pinned and dirty flags of key (false for absent keys).
func (x *index) flags(key Key) (pinned, dirty bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if e, ok := x.entries[key]; ok {
		return e.pinned, e.dirty
	}
	return false, false
}

// mapping returns key's locked mapping, or nil.
func (x *index) mapping(key Key) []byte {
	x.mu.Lock()
	defer x.mu.Unlock()
	if e, ok := x.entries[key]; ok {
		return e.mapping
	}
	return nil
}

// evictClean removes least recently used entries that are neither dirty
// nor pinned until capacity-used-reserved >= need or none is left, and
// returns them (the caller deletes their files and owns their mappings).
func (x *index) evictClean(need int64) []*entry {
	x.mu.Lock()
	defer x.mu.Unlock()
	var out []*entry
	for el := x.lru.Back(); el != nil && x.capacity-x.used-x.reserved < need; {
		e := el.Value.(*entry)
		el = el.Prev()
		if e.dirty || e.pinned {
			continue
		}
		x.deleteLocked(e)
		out = append(out, e)
	}
	return out
}

// oldest returns up to n Infos, least recently used first.
func (x *index) oldest(n int) []Info {
	x.mu.Lock()
	defer x.mu.Unlock()
	out := make([]Info, 0, min(n, len(x.entries)))
	for el := x.lru.Back(); el != nil && len(out) < n; el = el.Prev() {
		out = append(out, el.Value.(*entry).info)
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
	out := make([]Info, 0, len(m.entries))
	for _, e := range m.entries {
		out = append(out, e.info)
	}
	return out
}

// modelNames returns the models that have at least one entry, sorted.
func (x *index) modelNames() []string {
	x.mu.Lock()
	out := make([]string, 0, len(x.models))
	for name := range x.models {
		out = append(out, name)
	}
	x.mu.Unlock()
	sort.Strings(out)
	return out
}

// modelUsage returns the files and bytes of model.
func (x *index) modelUsage(model string) (files, bytes int64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if m := x.models[model]; m != nil {
		return int64(len(m.entries)), m.bytes
	}
	return 0, 0
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
	out := make([]*entry, 0, len(m.entries))
	for _, e := range m.entries {
		out = append(out, e)
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
	out := make([]*entry, 0, len(x.entries))
	for el := x.lru.Front(); el != nil; el = el.Next() {
		out = append(out, el.Value.(*entry))
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
	return Usage{Capacity: x.capacity, Used: x.used, Files: int64(len(x.entries))}
}

// room is capacity minus used bytes and bytes reserved by commits in flight.
func (x *index) room() int64 {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.capacity - x.used - x.reserved
}
