package vfs

import (
	"bytes"
	"errors"
	"slices"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/fs/ino"
	"github.com/ucmfs/ucmfs/layout"
	"github.com/ucmfs/ucmfs/layout/registry"
	"github.com/ucmfs/ucmfs/store"
)

// Shard is a shard directory and the rules of its names, its layout's:
// <model>/<hh> of a ucmb model, the published blocks and sidecars whose
// id starts with hh; or a raw shard <model>/<dir> of a ucm-posix model
// (docs/spec.md §2), the raw blocks of its width whose id starts with its
// name (every id for "data"). The adapter's shard node and its light
// layer both look names up and list them through it, so the two answer
// alike.
type Shard struct {
	Model  string
	Num    byte          // a ucmb shard's number
	Dir    string        // the directory's name
	Width  int           // -1: a ucmb shard; 0..4: a raw shard of that width (its node's number)
	Layout layout.Layout // the model's
}

// HexShard is shard number sh of model, one of the 256 of its layout
// (layout.HexShards).
func HexShard(model string, sh byte) Shard {
	return Shard{Model: model, Num: sh, Dir: format.ShardName(sh), Width: -1, Layout: hexShards}
}

// MadeShard is the shard directory dir, of width w, that the store made
// in model (layout.MadeShards).
func MadeShard(model, dir string, w int) Shard {
	return Shard{Model: model, Dir: dir, Width: w, Layout: madeShards}
}

// RefShard is the shard of a light layer's directory: number num (width
// -1) or the made shard dir of width w.
func RefShard(model string, num byte, dir string, w int) Shard {
	if w < 0 {
		return Shard{Model: model, Num: num, Dir: dir, Width: -1, Layout: hexShards}
	}
	return MadeShard(model, dir, w)
}

// hexShards and madeShards are the layouts of the two shapes of shard
// directories.
var hexShards, madeShards = shaped(layout.HexShards), shaped(layout.MadeShards)

// shaped is the layout whose directories have shape d.
func shaped(d layout.Dirs) layout.Layout {
	return registry.Find(func(l layout.Layout) bool { return l.Dirs() == d })
}

// Key parses a final file name of the shard (layout.Layout.ParseFinal).
func (sh Shard) Key(name string) (format.Key, error) {
	return sh.Layout.ParseFinal(sh.Model, sh.Dir, name)
}

// ParseName parses a final or a staging name of the shard: the key it
// stands for, and whether it is a staging name.
func (sh Shard) ParseName(name string) (format.Key, bool, error) {
	return sh.Layout.ParseName(sh.Model, sh.Dir, name)
}

// Keys returns the published files of the shard: those of the index
// groups it reads (layout.Layout.ShardRange) that are its files.
func (sh Shard) Keys(st *store.Store) []format.Key {
	lo, hi := sh.Layout.ShardRange(sh.Dir)
	var out []format.Key
	for b := lo; b < hi; b++ {
		keys := st.Tiers().ShardKeys(sh.Model, byte(b))
		if hi-lo == 1 {
			out = keys[:0] // one group: filtered in its own array
		}
		for _, k := range keys {
			if sh.Layout.InShard(k, sh.Dir) {
				out = append(out, k)
			}
		}
	}
	return out
}

// Found is what a lookup of a published file's name found (LookupKey).
type Found struct {
	Key  format.Key
	Info store.BlockInfo // the published file's, when Err is nil
	// Err is nil for a published file, store.ErrNotFound for a miss,
	// another error where the index could not say.
	Err   error
	epoch uint64 // the name's write epoch before the lookup
}

// Lookup looks name up among the shard's published files, from the
// index. A name that is no file of the shard is an error wrapping
// format.ErrName.
func (sh Shard) Lookup(st *store.Store, name string) (Found, error) {
	key, err := sh.Key(name)
	if err != nil {
		return Found{}, err
	}
	return LookupKey(st, key), nil
}

// LookupKey looks the published file key up in the index: every lookup
// of a published name, of a shard's or a files model's, its node's or
// the light layer's, is this one.
func LookupKey(st *store.Store, key format.Key) Found {
	f := Found{Key: key, epoch: st.Writes().Epoch(key)}
	f.Info, f.Err = st.Tiers().Stat(key)
	return f
}

// Missing reports whether the lookup found no published file.
func (f Found) Missing() bool { return errors.Is(f.Err, store.ErrNotFound) }

// MissCacheable reports whether the miss may be cached: the mount does
// not write the name, and finished no write of it since the lookup began
// (else the file shows up as soon as its writer's close publishes it).
func (f Found) MissCacheable(st *store.Store) bool {
	return !st.Writes().Active(f.Key) && st.Writes().Epoch(f.Key) == f.epoch
}

// ShardEntry is one name of a shard's listing: a published file (its key)
// or a file being written.
type ShardEntry struct {
	Name      string
	Ino       uint64
	Key       format.Key
	Published bool
}

// Listing is what the shard shows to a caller of uid, in NameOrder: the
// published files, numbered as inos holds them, and uid's staging files.
func (sh Shard) Listing(st *store.Store, inos *ino.Table, uid uint32) []ShardEntry {
	keys := sh.Keys(st)
	// Sorted by name without reading the names: a published file's name
	// is its id in lowercase hex, which sorts as the id's bytes, then its
	// extension. The ids are in the keys themselves; comparing the name
	// strings followed two pointers per comparison (13% of the daemon's
	// CPU in a `du -s` of 10^6 blocks).
	slices.SortFunc(keys, func(a, b format.Key) int {
		if c := bytes.Compare(a.ID[:], b.ID[:]); c != 0 {
			return c
		}
		return KindOrder(a.Kind, b.Kind)
	})
	staging := st.Writes().StagingIn(sh.Model, sh.Dir, uid)
	ents := make([]ShardEntry, 0, len(keys)+len(staging))
	for _, k := range keys {
		ents = append(ents, ShardEntry{Name: k.FileName(), Ino: inos.Peek(ino.FileName(k)), Key: k, Published: true})
	}
	if len(staging) == 0 {
		return ents
	}
	for _, w := range staging {
		ents = append(ents, ShardEntry{Name: w.Name(), Ino: PendingIno(w)})
	}
	slices.SortFunc(ents, func(a, b ShardEntry) int { return NameOrder(a.Name, b.Name) })
	return ents
}

// PendingIno is the node number of a file being written.
func PendingIno(w *store.Draft) uint64 { return uint64(ino.Pending)<<ino.Shift | w.Seq()&ino.LowMask }

// RawShard parses a name in ucm-posix model model: a shard directory of a
// width the model has.
func RawShard(st *store.Store, model, name string) (w int, ok bool) {
	w, ok = format.ParseRawShard(name)
	if !ok {
		return 0, false
	}
	for _, have := range st.Models().ShardWidths(model) {
		if have == w {
			return w, true
		}
	}
	return 0, false
}

// EachRawShard calls fn with every shard directory of the widths a
// ucm-posix model has, in order: "data" for width 0, else every name of
// w lowercase hex digits.
func EachRawShard(widths []int, fn func(name string, w int)) {
	const digits = "0123456789abcdef"
	for _, w := range widths {
		if w == 0 {
			fn(format.RawDataShard, 0)
			continue
		}
		n := 1 << (4 * w)
		buf := make([]byte, w)
		for i := range n {
			for j := range w {
				buf[j] = digits[(i>>(4*(w-1-j)))&15]
			}
			fn(string(buf), w)
		}
	}
}
