// Package index is the in-memory record of what one tier holds: one Entry per
// published file, an LRU order by the daemon's own accesses (never atime),
// exact byte accounting, and the files of each model grouped by shard (so
// a shard directory is listed without walking its model). Both tiers use
// it (package tiers).
//
// It is sized for millions of files: an Entry is one small struct (the
// model name shared with its model's set, the publish time as nanoseconds,
// the LRU links inside it) and one 16-byte slot (the pointer and 32 bits
// of its hash) in its shard's hash table (internal/hashtab: 21 to 43
// bytes an Entry, where a Go map took 37 to 75).
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
//   - reservedFiles is the number of those commits;
//   - reserve never lets used+reserved exceed capacity, nor files +
//     reservedFiles exceed maxFiles (when set), so a tier whose files all
//     arrive through reserve never holds more than either. Files adopted
//     from disk (adopt) are counted even past them: they exist, and honest
//     accounting lets the stack evict them.
package index

import (
	"hash/maphash"
	"iter"
	"sync"
	"time"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/internal/hashtab"
)

// Count is a number of files, the blocks among them, and their bytes
// (the fields of tiers.ModelCount, which converts from it).
type Count struct {
	Blocks, Files, Bytes int64
}

// add adds c to m.
func (m *Count) add(c Count) {
	m.Blocks += c.Blocks
	m.Files += c.Files
	m.Bytes += c.Bytes
}

// slot is an Entry's key within its model's shard table.
type slot struct {
	id   format.ID
	kind format.Kind
}

// slotSeed seeds the shard tables' hash: ids are names users choose, so
// they must not be able to pick ids that collide.
var slotSeed = maphash.MakeSeed()

func (s slot) hash() uint64 { return maphash.Comparable(slotSeed, s) }

// shardSet is the entries of one shard directory of a model, by slot.
// The zero shardSet is empty.
type shardSet struct{ t hashtab.Table[*Entry] }

// get returns the Entry of s, or nil.
func (sh *shardSet) get(s slot) *Entry {
	e, _ := sh.t.Find(s.hash(), func(e *Entry) bool { return e.ID == s.id && e.Kind == s.kind })
	return e
}

// Reserve sizes the set for n entries.
func (sh *shardSet) reserve(n int) { sh.t.Reserve(n) }

// put adds e, whose slot is not in the set.
func (sh *shardSet) put(e *Entry) { sh.t.Insert(slot{e.ID, e.Kind}.hash(), e) }

// del takes e out of the set.
func (sh *shardSet) del(e *Entry) {
	sh.t.Delete(slot{e.ID, e.Kind}.hash(), func(x *Entry) bool { return x == e })
}

// len returns the number of entries in the set.
func (sh *shardSet) len() int { return sh.t.Len() }

// all yields the entries of the set; it must not change meanwhile.
func (sh *shardSet) all() iter.Seq[*Entry] { return sh.t.All() }

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
	dirty  Count
	blocks int64
	// raw counts the raw files (UCM's names) of each shard width, so the
	// widths a model uses are known without a walk (Stack.RawWidths).
	raw [format.MaxShardWidth + 1]int64
}

// count adds (n = 1) or takes out (n = -1) e's part of the counters of m
// other than files and bytes.
func (m *modelSet) count(e *Entry, n int64) {
	block := int64(0)
	if e.Kind == format.Block || e.Kind.Headerless() { // a raw payload or a File is a block too
		block = n
	}
	m.blocks += block
	if e.Kind.Raw() {
		m.raw[e.Kind.Width()] += n
	}
	if e.Is(Dirty) {
		m.dirty.Blocks += block
		m.dirty.Files += n
		m.dirty.Bytes += n * e.Size
	}
}

// count adds (n = 1) or takes out (n = -1) e's part of m's counters and
// of the index's dirty total; under x.mu.
func (x *Index) count(m *modelSet, e *Entry, n int64) {
	if e.Is(Pinned) {
		x.pinned += n * x.cost(e.Size)
	}
	d := m.dirty
	x.dirty.add(Count{Blocks: -d.Blocks, Files: -d.Files, Bytes: -d.Bytes})
	m.count(e, n)
	x.dirty.add(m.dirty)
}

// Index is a concurrency-safe map of keys to entries; see the package
// comment.
type Index struct {
	mu       sync.Mutex
	models   map[string]*modelSet
	lru      Entry // sentinel: lru.next is the most recently used
	files    int64
	capacity int64
	used     int64
	reserved int64
	// reservedFiles counts the commits in flight; maxFiles bounds files +
	// reservedFiles (0: no bound), see SetMaxFiles.
	reservedFiles, maxFiles int64
	dirty                   Count
	// pinned is what the entries flagged Pinned take of the capacity;
	// pinLimit bounds the pins PinWithin and the pin rule make (0: none).
	pinned, pinLimit int64 // the entries flagged dirty, all models
	unit             int64 // what a file costs is its size rounded up to this (0: its size); see SetUnit
	charged          int64 // the sum of the entries' costs (used, with unit 0)
	observe          Observer
	pinRule          func(format.Key) bool // entries it holds for enter pinned (SetPinRule)
}

// Observer is told of every entry that enters the index (stored true) or
// leaves it (false), under the index's lock: it must not block or call
// the index. Drain tells it nothing (the tier is closing).
type Observer func(e *Entry, stored bool)

// SetObserver installs fn (nil: none) for the entries added and removed
// from then on.
func (x *Index) SetObserver(fn Observer) {
	x.mu.Lock()
	x.observe = fn
	x.mu.Unlock()
}

// SetPinRule installs rule (nil: none): an entry that enters the index
// from then on, and that rule holds for, enters pinned. It is called
// under the index's lock: it must not block or call the index.
func (x *Index) SetPinRule(rule func(format.Key) bool) {
	x.mu.Lock()
	x.pinRule = rule
	x.mu.Unlock()
}

// SetUnit makes every file cost its size rounded up to unit bytes against
// the capacity (reservations, Room, the room evictions make; Usage still
// reports bytes and Charged the costs): a tmpfs spends a whole page on a
// file of 64 bytes, so a memory tier that counted bytes would fill its
// tmpfs while it reports little used. Call it before the first file.
func (x *Index) SetUnit(unit int64) {
	x.mu.Lock()
	x.unit = unit
	x.mu.Unlock()
}

// SetMaxFiles bounds the number of files the tier holds (n <= 0: no
// bound): each is an entry of this index in the daemon's memory, whatever
// its size, so a tier as large as a disk of tiny files would otherwise
// take the daemon's memory without bound. A tier holding n files has no
// Room, as a full one: a commit makes room by evicting one (the least
// recently used), as for bytes. Files adopted past it stay until the
// stack evicts them.
func (x *Index) SetMaxFiles(n int64) {
	x.mu.Lock()
	x.maxFiles = max(n, 0)
	x.mu.Unlock()
}

// roomLocked is Room under x.mu: the bytes capacity leaves, or at most -1
// when the tier holds maxFiles files (with those in flight).
func (x *Index) roomLocked() int64 {
	room := x.capacity - x.charged - x.reserved
	if x.maxFiles > 0 && x.files+x.reservedFiles >= x.maxFiles {
		return min(room, -1)
	}
	return room
}

// cost is what a file of size bytes takes of the capacity.
func (x *Index) cost(size int64) int64 {
	if x.unit <= 1 || size < 0 {
		return size
	}
	return max(size+x.unit-1, x.unit) / x.unit * x.unit
}

// New returns an empty index of the given capacity in bytes.
func New(capacity int64) *Index {
	x := &Index{models: make(map[string]*modelSet), capacity: capacity}
	x.lru.next, x.lru.prev = &x.lru, &x.lru
	return x
}

// lookupLocked returns key's Entry, or nil.
func (x *Index) lookupLocked(key format.Key) *Entry {
	m := x.models[key.Model]
	if m == nil {
		return nil
	}
	return m.shardOf(key)
}

// shardOf returns key's Entry in m, or nil.
func (m *modelSet) shardOf(key format.Key) *Entry {
	return m.shards[key.ID[0]].get(slot{key.ID, key.Kind})
}

// SetCapacity changes the capacity (DirTier sizes itself after a rebuild).
func (x *Index) SetCapacity(c int64) {
	x.mu.Lock()
	x.capacity = c
	x.mu.Unlock()
}

// Reserve claims size bytes, and a file, for a commit in flight. It
// reports false, and claims nothing, when used+reserved+size would exceed
// the capacity or the tier holds its most files (SetMaxFiles).
func (x *Index) Reserve(size int64) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	if size < 0 || x.roomLocked() < x.cost(size) {
		return false
	}
	x.reserved += x.cost(size)
	x.reservedFiles++
	return true
}

// Unreserve gives back a reservation whose commit did not publish.
func (x *Index) Unreserve(size int64) {
	x.mu.Lock()
	x.reserved -= x.cost(size)
	x.reservedFiles--
	x.mu.Unlock()
}

// Add records a file published after reserve(e.Size), turning the
// reservation into use. If the key is already recorded (a racing adopt),
// the reservation is given back, the recorded Entry is kept and add
// reports false with a copy of it; else true with a copy of e.
func (x *Index) Add(e *Entry) (Entry, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.reserved -= x.cost(e.Size)
	x.reservedFiles--
	if old := x.lookupLocked(e.Key()); old != nil {
		return old.snapshot(), false
	}
	x.insertLocked(e)
	return e.snapshot(), true
}

// Adopt records a file found on disk without a reservation (rebuild, or a
// file another daemon published in a shared directory). It reports false
// if the key was already recorded.
func (x *Index) Adopt(e *Entry) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.lookupLocked(e.Key()) != nil {
		return false
	}
	x.insertLocked(e)
	return true
}

// AdoptAll adopts entries found by a rebuild (into the empty index of a
// starting tier), in order (the last is the most recently used), under
// one lock; keys already recorded are skipped.
func (x *Index) AdoptAll(es []*Entry) {
	x.mu.Lock()
	defer x.mu.Unlock()
	// Size the new shard tables once: growing them Entry by Entry would
	// leave every smaller table behind as garbage.
	counts := map[*string]*[256]int{}
	for _, e := range es {
		c := counts[e.model]
		if c == nil {
			c = &[256]int{}
			counts[e.model] = c
		}
		c[e.ID[0]]++
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
		if x.lookupLocked(e.Key()) == nil {
			x.insertLocked(e)
		}
	}
}

func (x *Index) insertLocked(e *Entry) {
	m := x.models[*e.model]
	if m == nil {
		m = &modelSet{name: *e.model}
		x.models[m.name] = m
	}
	m.shards[e.ID[0]].put(e)
	m.files++
	m.bytes += e.Size
	if x.pinRule != nil && x.pinRule(e.Key()) && x.pinFits(e) {
		e.Set(Pinned, true)
	}
	x.count(m, e, 1)
	x.files++
	x.used += e.Size
	x.charged += x.cost(e.Size)
	x.pushFrontLocked(e)
	if x.observe != nil {
		x.observe(e, true)
	}
}

func (x *Index) deleteLocked(e *Entry) {
	x.unlinkLocked(e)
	if m := x.models[*e.model]; m != nil {
		m.shards[e.ID[0]].del(e)
		m.files--
		m.bytes -= e.Size
		x.count(m, e, -1)
		if m.files == 0 {
			delete(x.models, m.name)
		}
	}
	x.files--
	x.used -= e.Size
	x.charged -= x.cost(e.Size)
	if x.observe != nil {
		x.observe(e, false)
	}
}

// pushFrontLocked puts e first (most recently used) in the LRU list.
func (x *Index) pushFrontLocked(e *Entry) {
	e.prev, e.next = &x.lru, x.lru.next
	x.lru.next.prev = e
	x.lru.next = e
}

// unlinkLocked takes e out of the LRU list.
func (x *Index) unlinkLocked(e *Entry) {
	if e.next == nil {
		return
	}
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
}

// Get returns a copy of key's entry (its flags included).
func (x *Index) Get(key format.Key) (Entry, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	e := x.lookupLocked(key)
	if e == nil {
		return Entry{}, false
	}
	return e.snapshot(), true
}

// TouchEntry marks key as just used and returns its Entry and size; the
// Entry is nil if key is not recorded.
func (x *Index) TouchEntry(key format.Key) (*Entry, int64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	e := x.lookupLocked(key)
	if e == nil {
		return nil, 0
	}
	x.unlinkLocked(e)
	x.pushFrontLocked(e)
	return e, e.Size
}

// Has reports whether key is recorded (an allocation-free get).
func (x *Index) Has(key format.Key) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.lookupLocked(key) != nil
}

// SetCRC records the CRC read lazily for key (if it is still recorded).
func (x *Index) SetCRC(key format.Key, crc uint32, has bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if e := x.lookupLocked(key); e != nil && !e.Is(CRCRead) {
		e.CRC = crc
		e.Set(HasCRC, has)
		e.Set(CRCRead, true)
	}
}

// SetCRCFor is SetCRC for the Entry e: nothing is recorded when e is no
// longer key's Entry (the CRC was read from a file of a version replaced
// since).
func (x *Index) SetCRCFor(key format.Key, e *Entry, crc uint32, has bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.lookupLocked(key) == e && !e.Is(CRCRead) {
		e.CRC = crc
		e.Set(HasCRC, has)
		e.Set(CRCRead, true)
	}
}

// FillCRC records crc as key's CRC if the Entry has none yet; it reports
// whether key is recorded.
func (x *Index) FillCRC(key format.Key, crc uint32) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	e := x.lookupLocked(key)
	if e != nil && !e.Is(HasCRC) {
		e.CRC = crc
		e.Set(HasCRC, true)
	}
	return e != nil
}

// FillCRCOf is FillCRC for the Entry e alone: when key's Entry is no
// longer e (its file was replaced since the bytes the CRC was computed
// from were read) it records nothing and reports false.
func (x *Index) FillCRCOf(key format.Key, e *Entry, crc uint32) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.fillCRCOfLocked(key, e, crc)
}

// fillCRCOfLocked is FillCRCOf under x.mu.
func (x *Index) fillCRCOfLocked(key format.Key, e *Entry, crc uint32) bool {
	if e == nil || x.lookupLocked(key) != e {
		return false
	}
	if !e.Is(HasCRC) {
		e.CRC = crc
		e.Set(HasCRC, true)
	}
	return true
}

// SetCRCOf records crc, computed from the file of Entry e, as key's CRC
// (read: CRCRead, as SetCRC does) when e is still key's Entry and has
// none; it reports whether e is still key's Entry.
func (x *Index) SetCRCOf(key format.Key, e *Entry, crc uint32) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	if !x.fillCRCOfLocked(key, e, crc) {
		return false
	}
	e.Set(CRCRead, true)
	return true
}

// Remove takes key out of the index and returns its Entry, whose mapping
// the caller now owns.
func (x *Index) Remove(key format.Key) (*Entry, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	e := x.lookupLocked(key)
	if e == nil {
		return nil, false
	}
	x.deleteLocked(e)
	return e, true
}

// Touch marks key as just used. It reports whether key is recorded.
func (x *Index) Touch(key format.Key) bool {
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

// SetFlags sets the dirty or pinned flag of key; it reports false if the
// key is not recorded.
func (x *Index) SetFlags(key format.Key, set func(*Entry)) bool {
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

// SetPinLimit bounds what pinned entries take of the capacity (n <= 0:
// no bound) for the pins PinWithin and the pin rule make; SetFlags
// pins past it (a GPU load's pin, which ends with the load).
func (x *Index) SetPinLimit(n int64) {
	x.mu.Lock()
	x.pinLimit = max(n, 0)
	x.mu.Unlock()
}

// Pinned is what the pinned entries take of the capacity.
func (x *Index) Pinned() int64 {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.pinned
}

// pinFits reports whether pinning e, not pinned, stays within the pin
// limit; under x.mu.
func (x *Index) pinFits(e *Entry) bool {
	return x.pinLimit <= 0 || x.pinned+x.cost(e.Size) <= x.pinLimit
}

// PinWithin pins key unless that takes the pinned entries past the pin
// limit (SetPinLimit). found is false when key is not recorded; fits
// false when the limit refused it (key already pinned fits).
func (x *Index) PinWithin(key format.Key) (found, fits bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	e := x.lookupLocked(key)
	if e == nil {
		return false, false
	}
	if e.Is(Pinned) {
		return true, true
	}
	if !x.pinFits(e) {
		return true, false
	}
	m := x.models[key.Model]
	x.count(m, e, -1)
	e.Set(Pinned, true)
	x.count(m, e, 1)
	return true, true
}

// Flags returns the pinned and dirty flags of key (false for absent keys).
func (x *Index) Flags(key format.Key) (pinned, dirty bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if e := x.lookupLocked(key); e != nil {
		return e.Is(Pinned), e.Is(Dirty)
	}
	return false, false
}

// Mapping returns key's mapping, or nil.
func (x *Index) Mapping(key format.Key) []byte {
	x.mu.Lock()
	defer x.mu.Unlock()
	if e := x.lookupLocked(key); e != nil {
		return e.Mapping()
	}
	return nil
}

// DirtyTotal is the dirty count of every model, kept as entries come,
// go and change flags (index.count): the write-back path reads it once
// per block.
func (x *Index) DirtyTotal() Count {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.dirty
}

// EntryOf returns key's entry, or nil.
func (x *Index) EntryOf(key format.Key) *Entry {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.lookupLocked(key)
}

// IsEntry reports whether e is key's entry.
func (x *Index) IsEntry(key format.Key, e *Entry) bool { return x.EntryOf(key) == e }

// TouchIf marks key as just used if e is still its entry, and reports
// whether it is, with its size.
func (x *Index) TouchIf(key format.Key, e *Entry) (int64, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.lookupLocked(key) != e {
		return 0, false
	}
	x.unlinkLocked(e)
	x.pushFrontLocked(e)
	return e.Size, true
}

// SetMTime records t as key's mtime and marks it used; it reports whether
// key is recorded.
func (x *Index) SetMTime(key format.Key, t time.Time) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	e := x.lookupLocked(key)
	if e == nil {
		return false
	}
	e.MTime = t.UnixNano()
	x.unlinkLocked(e)
	x.pushFrontLocked(e)
	return true
}
