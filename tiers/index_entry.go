package tiers

import (
	"sync"
	"time"
	"unsafe"

	"github.com/ucmfs/ucmfs/hashdir"
)

// entry is the record of one published file: 64 bytes, the whole of what
// the daemon keeps per block of a directory tier (with one slot in its
// shard's map, see index.go and docs/design.md).
type entry struct {
	model      *string    // 8: its model's name, interned (one string per model name)
	id         hashdir.ID // 16
	prev, next *entry     // 16: in index.lru; nil while not indexed
	size       int64      // 8
	mtime      int64      // 8: publish time, Unix nanoseconds (0: unknown)
	crc        uint32     // 4
	kind       hashdir.Kind
	flags      entryFlags
}

// memEntry is an entry of the memory tier: the entry and the start of the
// tier's read-only mapping of the file (size bytes), or nil. Once an entry
// leaves the index its remover owns the mapping. Only the memory tier
// makes them (newMemEntry), so directory-tier entries carry no mapping.
type memEntry struct {
	entry
	mapped *byte
}

// entryFlags are an entry's yes/no facts.
type entryFlags uint8

const (
	flagPinned entryFlags = 1 << iota // keep in the tier (MemTier)
	flagDirty                         // not yet on a persistent tier (MemTier)
	flagHasCRC                        // crc is the payload's CRC-32C
	// flagCRCRead is set when crc and flagHasCRC are final: given at
	// commit or read from the file's xattr (DirTier). Entries rebuilt
	// from a directory listing start without it.
	flagCRCRead
	flagMem // the entry is the first field of a memEntry
)

// is reports whether flag f is set.
func (e *entry) is(f entryFlags) bool { return e.flags&f != 0 }

// set sets or clears flag f.
func (e *entry) set(f entryFlags, on bool) {
	if on {
		e.flags |= f
	} else {
		e.flags &^= f
	}
}

// mem returns the memEntry e is part of, or nil for a directory tier's.
func (e *entry) mem() *memEntry {
	if !e.is(flagMem) {
		return nil
	}
	return (*memEntry)(unsafe.Pointer(e))
}

// mapping is the entry's mapping, or nil.
func (e *entry) mapping() []byte {
	m := e.mem()
	if m == nil || m.mapped == nil {
		return nil
	}
	return unsafe.Slice(m.mapped, e.size)
}

// hasMapping reports whether the entry has a mapping.
func (e *entry) hasMapping() bool {
	m := e.mem()
	return m != nil && m.mapped != nil
}

// setMapping records b, a mapping of the whole file (len(b) == size), or
// clears it with nil. A directory tier's entry keeps none.
func (e *entry) setMapping(b []byte) {
	m := e.mem()
	if m == nil {
		return
	}
	if len(b) == 0 || int64(len(b)) != e.size {
		m.mapped = nil
		return
	}
	m.mapped = &b[0]
}

// newEntry makes the entry of a file described by info.
func newEntry(info Info) *entry {
	e := &entry{}
	e.fill(info)
	return e
}

// newMemEntry makes the entry of a memory-tier file described by info.
func newMemEntry(info Info) *entry {
	m := &memEntry{}
	m.fill(info)
	m.set(flagMem, true)
	return &m.entry
}

func (e *entry) fill(info Info) {
	e.model, e.id, e.kind, e.size, e.crc = internModel(info.Key.Model), info.Key.ID, info.Key.Kind, info.Size, info.CRC
	e.set(flagHasCRC, info.HasCRC)
	if !info.MTime.IsZero() {
		e.mtime = info.MTime.UnixNano()
	}
}

// key is the entry's Key.
func (e *entry) key() hashdir.Key { return hashdir.Key{Model: *e.model, ID: e.id, Kind: e.kind} }

// info is the entry's Info.
func (e *entry) info() Info {
	in := Info{Key: e.key(), Size: e.size, CRC: e.crc, HasCRC: e.is(flagHasCRC)}
	if e.mtime != 0 {
		in.MTime = time.Unix(0, e.mtime)
	}
	return in
}

// models interns model names: every entry of a model points at one
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
