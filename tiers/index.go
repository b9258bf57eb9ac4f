package tiers

import (
	"hash/maphash"
	"iter"
	"sync"

	"github.com/ucmfs/ucmfs/hashdir"
	"github.com/ucmfs/ucmfs/internal/hashtab"
)

// The index is the in-memory record of what one tier holds: one entry per
// published file, an LRU order by the daemon's own accesses (never atime),
// exact byte accounting, and the files of each model grouped by shard (so
// a shard directory is listed without walking its model). Both tiers use
// it.
//
// It is sized for millions of files: an entry is one small struct (the
// model name shared with its model's set, the publish time as nanoseconds,
// the LRU links inside it) and one 16-byte slot (the pointer and 32 bits
// of its hash) in its shard's hash table (internal/hashtab: 21 to 43
// bytes an entry, where a Go map took 37 to 75).
//
// Lock order: index.mu is a leaf lock. Nothing else is locked and no
// filesystem call is made while it is held; callers take their own locks
// (MemTier.life, writer mutexes) before calling into the index, never the
// other way round.
//
// Invariants, under index.mu:
//   - the shard tables of models and the lru list hold the same set of
//     entries, and a model's set exists only while it holds one;
//   - used is the sum of entries' sizes, files their count;
//   - reserved is the sum of sizes of commits in flight (reserve called,
//     add or unreserve not yet);
//   - reserve never lets used+reserved exceed capacity, so a tier whose
//     files all arrive through reserve never holds more than capacity.
//     Files adopted from disk (adopt) are counted even past capacity: they
//     exist, and honest accounting lets the stack evict them.

// slot is an entry's key within its model's shard table.
type slot struct {
	id   hashdir.ID
	kind hashdir.Kind
}

// slotSeed seeds the shard tables' hash: ids are names users choose, so
// they must not be able to pick ids that collide.
var slotSeed = maphash.MakeSeed()

func (s slot) hash() uint64 { return maphash.Comparable(slotSeed, s) }

// shardSet is the entries of one shard directory of a model, by slot.
// The zero shardSet is empty.
type shardSet struct{ t hashtab.Table[*entry] }

// get returns the entry of s, or nil.
func (sh *shardSet) get(s slot) *entry {
	e, _ := sh.t.Find(s.hash(), func(e *entry) bool { return e.id == s.id && e.kind == s.kind })
	return e
}

// reserve sizes the set for n entries.
func (sh *shardSet) reserve(n int) { sh.t.Reserve(n) }

// put adds e, whose slot is not in the set.
func (sh *shardSet) put(e *entry) { sh.t.Insert(slot{e.id, e.kind}.hash(), e) }

// del takes e out of the set.
func (sh *shardSet) del(e *entry) {
	sh.t.Delete(slot{e.id, e.kind}.hash(), func(x *entry) bool { return x == e })
}

// len returns the number of entries in the set.
func (sh *shardSet) len() int { return sh.t.Len() }

// all yields the entries of the set; it must not change meanwhile.
func (sh *shardSet) all() iter.Seq[*entry] { return sh.t.All() }

// modelSet is the entries of one model, by shard (the id's first byte).
type modelSet struct {
	name   string
	shards [256]shardSet
	files  int64
	bytes  int64
	// dirtyFiles and dirtyBytes count the entries flagged dirty (the
	// memory tier's blocks not yet written back), so the stack can count
	// a model's distinct files without walking them (Stack.ModelUsage).
	// blocks counts the files of kind Block (files less sidecars).
	dirty  ModelCount
	blocks int64
	// raw counts the raw files (UCM's names) of each shard width, so the
	// widths a model uses are known without a walk (Stack.RawWidths).
	raw [hashdir.MaxShardWidth + 1]int64
}

// count adds (n = 1) or takes out (n = -1) e's part of the counters of m
// other than files and bytes.
func (m *modelSet) count(e *entry, n int64) {
	block := int64(0)
	if e.kind == hashdir.Block || e.kind.Raw() { // a raw payload is a block too
		block = n
	}
	m.blocks += block
	if e.kind.Raw() {
		m.raw[e.kind.Width()] += n
	}
	if e.is(flagDirty) {
		m.dirty.Blocks += block
		m.dirty.Files += n
		m.dirty.Bytes += n * e.size
	}
}

// count adds (n = 1) or takes out (n = -1) e's part of m's counters and
// of the index's dirty total; under x.mu.
func (x *index) count(m *modelSet, e *entry, n int64) {
	d := m.dirty
	x.dirty.add(ModelCount{Blocks: -d.Blocks, Files: -d.Files, Bytes: -d.Bytes})
	m.count(e, n)
	x.dirty.add(m.dirty)
}

// index is a concurrency-safe map of Key to entry; see the file comment.
type index struct {
	mu       sync.Mutex
	models   map[string]*modelSet
	lru      entry // sentinel: lru.next is the most recently used
	files    int64
	capacity int64
	used     int64
	reserved int64
	dirty    ModelCount // the entries flagged dirty, all models
}

// newIndex returns an empty index of the given capacity in bytes.
func newIndex(capacity int64) *index {
	x := &index{models: make(map[string]*modelSet), capacity: capacity}
	x.lru.next, x.lru.prev = &x.lru, &x.lru
	return x
}

// lookupLocked returns key's entry, or nil.
func (x *index) lookupLocked(key hashdir.Key) *entry {
	m := x.models[key.Model]
	if m == nil {
		return nil
	}
	return m.shardOf(key)
}

// shardOf returns key's entry in m, or nil.
func (m *modelSet) shardOf(key hashdir.Key) *entry {
	return m.shards[key.ID[0]].get(slot{key.ID, key.Kind})
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

// add records a file published after reserve(e.size), turning the
// reservation into use. If the key is already recorded (a racing adopt),
// the reservation is given back, the recorded entry is kept and add
// reports false with the recorded Info.
func (x *index) add(e *entry) (Info, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.reserved -= e.size
	if old := x.lookupLocked(e.key()); old != nil {
		return old.info(), false
	}
	x.insertLocked(e)
	return e.info(), true
}

// adopt records a file found on disk without a reservation (rebuild, or a
// file another daemon published in a shared directory). It reports false
// if the key was already recorded.
func (x *index) adopt(e *entry) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.lookupLocked(e.key()) != nil {
		return false
	}
	x.insertLocked(e)
	return true
}

// adoptAll adopts entries found by a rebuild (into the empty index of a
// starting tier), in order (the last is the most recently used), under
// one lock; keys already recorded are skipped.
func (x *index) adoptAll(es []*entry) {
	x.mu.Lock()
	defer x.mu.Unlock()
	// Size the new shard tables once: growing them entry by entry would
	// leave every smaller table behind as garbage.
	counts := map[*string]*[256]int{}
	for _, e := range es {
		c := counts[e.model]
		if c == nil {
			c = &[256]int{}
			counts[e.model] = c
		}
		c[e.id[0]]++
	}
	for name, c := range counts {
		m := x.models[*name]
		if m == nil {
			m = &modelSet{name: *name}
			x.models[m.name] = m
		}
		for hh, n := range c {
			if n > 0 {
				m.shards[hh].reserve(m.shards[hh].len() + n)
			}
		}
	}
	for _, e := range es {
		if x.lookupLocked(e.key()) == nil {
			x.insertLocked(e)
		}
	}
}

func (x *index) insertLocked(e *entry) {
	m := x.models[*e.model]
	if m == nil {
		m = &modelSet{name: *e.model}
		x.models[m.name] = m
	}
	m.shards[e.id[0]].put(e)
	m.files++
	m.bytes += e.size
	x.count(m, e, 1)
	x.files++
	x.used += e.size
	x.pushFrontLocked(e)
}

func (x *index) deleteLocked(e *entry) {
	x.unlinkLocked(e)
	if m := x.models[*e.model]; m != nil {
		m.shards[e.id[0]].del(e)
		m.files--
		m.bytes -= e.size
		x.count(m, e, -1)
		if m.files == 0 {
			delete(x.models, m.name)
		}
	}
	x.files--
	x.used -= e.size
}

// pushFrontLocked puts e first (most recently used) in the LRU list.
func (x *index) pushFrontLocked(e *entry) {
	e.prev, e.next = &x.lru, x.lru.next
	x.lru.next.prev = e
	x.lru.next = e
}

// unlinkLocked takes e out of the LRU list.
func (x *index) unlinkLocked(e *entry) {
	if e.next == nil {
		return
	}
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
}

// get returns the Info of key and whether its CRC fields are final.
func (x *index) get(key hashdir.Key) (info Info, crcRead, ok bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	e := x.lookupLocked(key)
	if e == nil {
		return Info{}, false, false
	}
	return e.info(), e.is(flagCRCRead), true
}

// describe returns the Info and the flags of key.
func (x *index) describe(key hashdir.Key) (info Info, pinned, dirty, ok bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	e := x.lookupLocked(key)
	if e == nil {
		return Info{}, false, false, false
	}
	return e.info(), e.is(flagPinned), e.is(flagDirty), true
}

// touchEntry marks key as just used and returns its entry and size; the
// entry is nil if key is not recorded.
func (x *index) touchEntry(key hashdir.Key) (*entry, int64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	e := x.lookupLocked(key)
	if e == nil {
		return nil, 0
	}
	x.unlinkLocked(e)
	x.pushFrontLocked(e)
	return e, e.size
}

// has reports whether key is recorded (an allocation-free get).
func (x *index) has(key hashdir.Key) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.lookupLocked(key) != nil
}

// setCRC records the CRC read lazily for key (if it is still recorded).
func (x *index) setCRC(key hashdir.Key, crc uint32, has bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if e := x.lookupLocked(key); e != nil && !e.is(flagCRCRead) {
		e.crc = crc
		e.set(flagHasCRC, has)
		e.set(flagCRCRead, true)
	}
}

// fillCRC records crc as key's CRC if the entry has none yet; it reports
// whether key is recorded.
func (x *index) fillCRC(key hashdir.Key, crc uint32) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	e := x.lookupLocked(key)
	if e != nil && !e.is(flagHasCRC) {
		e.crc = crc
		e.set(flagHasCRC, true)
	}
	return e != nil
}

// remove takes key out of the index and returns its entry, whose mapping
// the caller now owns.
func (x *index) remove(key hashdir.Key) (*entry, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	e := x.lookupLocked(key)
	if e == nil {
		return nil, false
	}
	x.deleteLocked(e)
	return e, true
}

// touch marks key as just used. It reports whether key is recorded.
func (x *index) touch(key hashdir.Key) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	e := x.lookupLocked(key)
	if e == nil {
		return false
	}
	x.unlinkLocked(e)
	x.pushFrontLocked(e)
	return true
}

// setFlags sets the dirty or pinned flag of key; it reports false if the
// key is not recorded.
func (x *index) setFlags(key hashdir.Key, set func(*entry)) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	e := x.lookupLocked(key)
	if e == nil {
		return false
	}
	m := x.models[key.Model]
	x.count(m, e, -1)
	set(e)
	x.count(m, e, 1)
	return true
}

// flags returns the pinned and dirty flags of key (false for absent keys).
func (x *index) flags(key hashdir.Key) (pinned, dirty bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if e := x.lookupLocked(key); e != nil {
		return e.is(flagPinned), e.is(flagDirty)
	}
	return false, false
}

// mapping returns key's mapping, or nil.
func (x *index) mapping(key hashdir.Key) []byte {
	x.mu.Lock()
	defer x.mu.Unlock()
	if e := x.lookupLocked(key); e != nil {
		return e.mapping()
	}
	return nil
}
