package tiers

import (
	"time"
	"unsafe"

	"github.com/ucmfs/ucmfs/hashdir"
)

// entry is the record of one published file (80 bytes).
type entry struct {
	model      string // its model's name (shared with the model's set once added)
	id         hashdir.ID
	size       int64
	mtime      int64  // publish time, Unix nanoseconds (0: unknown)
	prev, next *entry // in index.lru; nil while not indexed
	// mapped is the start of the MemTier's read-only mapping of the
	// file (size bytes), or nil. Once an entry leaves the index its
	// remover owns the mapping.
	mapped *byte
	crc    uint32
	kind   hashdir.Kind
	flags  entryFlags
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

// mapping is the entry's mapping, or nil.
func (e *entry) mapping() []byte {
	if e.mapped == nil {
		return nil
	}
	return unsafe.Slice(e.mapped, e.size)
}

// setMapping records b, a mapping of the whole file (len(b) == size), or
// clears it with nil.
func (e *entry) setMapping(b []byte) {
	if len(b) == 0 || int64(len(b)) != e.size {
		e.mapped = nil
		return
	}
	e.mapped = &b[0]
}

// newEntry makes the entry of a file described by info.
func newEntry(info Info) *entry {
	e := &entry{model: info.Key.Model, id: info.Key.ID, kind: info.Key.Kind, size: info.Size, crc: info.CRC}
	e.set(flagHasCRC, info.HasCRC)
	if !info.MTime.IsZero() {
		e.mtime = info.MTime.UnixNano()
	}
	return e
}

// key is the entry's Key.
func (e *entry) key() Key { return Key{Model: e.model, ID: e.id, Kind: e.kind} }

// info is the entry's Info.
func (e *entry) info() Info {
	in := Info{Key: e.key(), Size: e.size, CRC: e.crc, HasCRC: e.is(flagHasCRC)}
	if e.mtime != 0 {
		in.MTime = time.Unix(0, e.mtime)
	}
	return in
}
