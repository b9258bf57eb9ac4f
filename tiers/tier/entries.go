package tier

import (
	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/tiers/index"
)

// What a tier keeps per file is an entry of its index (package index);
// these convert between entries and the Info the tiers' API speaks.

// NewEntry is the index entry of a file described by info.
func NewEntry(info Info) *index.Entry {
	return index.NewEntry(info.Key, info.Size, info.MTime, info.CRC, info.HasCRC)
}

// NewMemEntry is NewEntry for a memory-tier file (its entry keeps the
// tier's mapping).
func NewMemEntry(info Info) *index.Entry {
	return index.NewMemEntry(info.Key, info.Size, info.MTime, info.CRC, info.HasCRC)
}

// InfoOf is the Info of entry e.
func InfoOf(e *index.Entry) Info {
	return Info{Key: e.Key(), Size: e.Size, MTime: e.ModTime(), CRC: e.CRC, HasCRC: e.Is(index.HasCRC)}
}

// InfosOf is the Info of each entry.
func InfosOf(es []index.Entry) []Info {
	out := make([]Info, len(es))
	for i := range es {
		out[i] = InfoOf(&es[i])
	}
	return out
}

// IndexGet is what index.Get tells of key as an Info, and whether the
// entry's CRC fields are final.
func IndexGet(x *index.Index, key format.Key) (info Info, crcRead, ok bool) {
	e, ok := x.Get(key)
	if !ok {
		return Info{}, false, false
	}
	return InfoOf(&e), e.Is(index.CRCRead), true
}
