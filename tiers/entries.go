package tiers

import (
	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/tiers/index"
)

// What a tier keeps per file is an entry of its index (package index);
// these convert between entries and the Info the tiers' API speaks.

// newEntry is the index entry of a file described by info.
func newEntry(info Info) *index.Entry {
	return index.NewEntry(info.Key, info.Size, info.MTime, info.CRC, info.HasCRC)
}

// newMemEntry is newEntry for a memory-tier file (its entry keeps the
// tier's mapping).
func newMemEntry(info Info) *index.Entry {
	return index.NewMemEntry(info.Key, info.Size, info.MTime, info.CRC, info.HasCRC)
}

// infoOf is the Info of entry e.
func infoOf(e *index.Entry) Info {
	return Info{Key: e.Key(), Size: e.Size, MTime: e.ModTime(), CRC: e.CRC, HasCRC: e.Is(index.HasCRC)}
}

// infosOf is the Info of each entry.
func infosOf(es []index.Entry) []Info {
	out := make([]Info, len(es))
	for i := range es {
		out[i] = infoOf(&es[i])
	}
	return out
}

// indexGet is what index.Get tells of key as an Info, and whether the
// entry's CRC fields are final.
func indexGet(x *index.Index, key format.Key) (info Info, crcRead, ok bool) {
	e, ok := x.Get(key)
	if !ok {
		return Info{}, false, false
	}
	return infoOf(&e), e.Is(index.CRCRead), true
}
