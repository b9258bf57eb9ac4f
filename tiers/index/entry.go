package index

import (
	"sync"
	"time"
	"unsafe"

	"github.com/ucmfs/ucmfs/format"
)

// Entry is the record of one published file: 72 bytes, the whole of what
// the daemon keeps per block of a directory tier (with one slot in its
// shard's map, see index.go and docs/design.md).
//
// The fields a tier sets and reads are exported; the model (interned, see
// NewEntries) and the LRU links are the index's. An Entry the index
// returns by value is a snapshot taken under its lock.
type Entry struct {
	model      *string   // 8: its model's name, interned (one string per model name)
	name       *string   // 8: a File's path in its model (format.Key.Name); nil for the others
	ID         format.ID // 16
	prev, next *Entry    // 16: in Index.lru; nil while not indexed
	Size       int64     // 8
	MTime      int64     // 8: publish time, Unix nanoseconds (0: unknown)
	CRC        uint32    // 4
	Kind       format.Kind
	flags      Flags
}

// memEntry is an Entry of the memory tier: the Entry and the start of the
// tier's read-only mapping of the file (size bytes), or nil. Once an Entry
// leaves the index its remover owns the mapping. Only the memory tier
// makes them (tier.NewMemEntry), so directory-tier entries carry no mapping.
type memEntry struct {
	Entry
	mapped *byte
}

// Flags are an Entry's yes/no facts.
type Flags uint8

// The flags.
const (
	Pinned Flags = 1 << iota // keep in the tier (the memory tier)
	Dirty                    // not yet on a persistent tier (the memory tier)
	HasCRC                   // CRC is the payload's CRC-32C
	// CRCRead is set when CRC and HasCRC are final: given at
	// commit or read from the file's xattr (DirTier). Entries rebuilt
	// from a directory listing start without it.
	CRCRead
	flagMem // the Entry is the first field of a memEntry
)

// Is reports whether flag f is set.
func (e *Entry) Is(f Flags) bool { return e.flags&f != 0 }

// Set sets or clears flag f of an entry not yet in an index (an indexed
// entry's flags change through Index.SetFlags, which keeps the counts).
func (e *Entry) Set(f Flags, on bool) {
	if on {
		e.flags |= f
	} else {
		e.flags &^= f
	}
}

// mem returns the memEntry e is part of, or nil for a directory tier's.
func (e *Entry) mem() *memEntry {
	if !e.Is(flagMem) {
		return nil
	}
	return (*memEntry)(unsafe.Pointer(e))
}

// Mapping is the Entry's mapping of its file, or nil.
func (e *Entry) Mapping() []byte {
	m := e.mem()
	if m == nil || m.mapped == nil {
		return nil
	}
	return unsafe.Slice(m.mapped, e.Size)
}

// HasMapping reports whether the Entry has a mapping.
func (e *Entry) HasMapping() bool {
	m := e.mem()
	return m != nil && m.mapped != nil
}

// SetMapping records b, a mapping of the whole file (len(b) == size), or
// clears it with nil. A directory tier's Entry keeps none.
func (e *Entry) SetMapping(b []byte) {
	m := e.mem()
	if m == nil {
		return
	}
	if len(b) == 0 || int64(len(b)) != e.Size {
		m.mapped = nil
		return
	}
	m.mapped = &b[0]
}

// NewEntry makes the entry of a file of key, size bytes, published at
// mtime (zero: unknown), with its payload CRC when hasCRC.
func NewEntry(key format.Key, size int64, mtime time.Time, crc uint32, hasCRC bool) *Entry {
	e := &Entry{}
	e.fill(key, size, mtime, crc, hasCRC)
	return e
}

// NewMemEntry is NewEntry for a memory-tier file: the entry can keep the
// tier's mapping of the file (SetMapping).
func NewMemEntry(key format.Key, size int64, mtime time.Time, crc uint32, hasCRC bool) *Entry {
	m := &memEntry{}
	m.fill(key, size, mtime, crc, hasCRC)
	m.Set(flagMem, true)
	return &m.Entry
}

// NewEntries makes n entries of model in one allocation, for a tier that
// finds many files at once (a rebuild, a snapshot); the caller fills
// their ID, Kind, Size and MTime. An entry removed later is garbage only
// once all its neighbours are.
func NewEntries(model string, n int) []Entry {
	name := internModel(model)
	es := make([]Entry, n)
	for i := range es {
		es[i].model = name
	}
	return es
}

func (e *Entry) fill(key format.Key, size int64, mtime time.Time, crc uint32, hasCRC bool) {
	e.model, e.ID, e.Kind, e.Size, e.CRC = internModel(key.Model), key.ID, key.Kind, size, crc
	e.SetName(key.Name)
	e.Set(HasCRC, hasCRC)
	if !mtime.IsZero() {
		e.MTime = mtime.UnixNano()
	}
}

// snapshot is a copy of e for a caller outside the lock: no LRU links,
// and no mapping (the mapping lives beside a memory-tier entry, not in
// the copy).
func (e *Entry) snapshot() Entry {
	c := *e
	c.prev, c.next = nil, nil
	c.flags &^= flagMem
	return c
}

// SetName sets the path of a File's entry not yet in an index ("" for
// the other kinds).
func (e *Entry) SetName(name string) {
	e.name = nil
	if name != "" {
		e.name = &name
	}
}

// Key is the entry's key.
func (e *Entry) Key() format.Key {
	k := format.Key{Model: *e.model, ID: e.ID, Kind: e.Kind}
	if e.name != nil {
		k.Name = *e.name
	}
	return k
}

// ModTime is the entry's MTime as a time (zero when unknown).
func (e *Entry) ModTime() time.Time {
	if e.MTime == 0 {
		return time.Time{}
	}
	return time.Unix(0, e.MTime)
}

// models interns model names: every Entry of a model points at one
// string. Names are never dropped (a daemon sees a handful of models; a
// name costs its length once).
var models struct {
	sync.RWMutex
	names map[string]*string
}

// internModel returns the one *string of name.
func internModel(name string) *string {
	models.RLock()
	p := models.names[name]
	models.RUnlock()
	if p != nil {
		return p
	}
	models.Lock()
	defer models.Unlock()
	if p = models.names[name]; p == nil {
		if models.names == nil {
			models.names = make(map[string]*string)
		}
		s := name
		p = &s
		models.names[name] = p
	}
	return p
}
