package fs

import (
	"strconv"

	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/fs/ino"
	"github.com/ucmfs/ucmfs/fs/light"
	"github.com/ucmfs/ucmfs/layout/registry"
	"github.com/ucmfs/ucmfs/store"
	"github.com/ucmfs/ucmfs/vfs"
)

// lightHost is the adapter as package light's layer sees it: the names
// and attributes of shard directories' files, answered from the index as
// the shard's go-fuse node would answer them (shard.go).
type lightHost struct{ s *fsState }

var _ light.Host = lightHost{}

// madeShard registers shard node d, just made, with the light layer.
func (s *fsState) madeShard(d *shardNode) *shardNode {
	s.shards.Made(d.ino, d, light.Ref{Model: d.sh.Model, Shard: d.sh.Num, Dir: d.sh.Dir, Width: d.sh.Width})
	return d
}

// shardOf is the shard ref names, with its names and rules.
func shardOf(ref light.Ref) vfs.Shard {
	return vfs.RefShard(ref.Model, ref.Shard, ref.Dir, ref.Width)
}

// ShardIno reports whether ino is a shard directory's number.
func (h lightHost) ShardIno(n uint64) bool { return ino.TagOf(n) == ino.Shard }

// Lookup answers a lookup of a published file, and a miss of a block,
// from the index, by the shard node's own lookup (vfs.Shard.Lookup); a
// staging file, a name that is no file of the shard and a sidecar that
// may be derived go to the bridge.
func (h lightHost) Lookup(ref light.Ref, name string, out *fuse.EntryOut) (format.Key, light.Outcome, fuse.Status) {
	s := h.s
	if s.store.Writes().Named(ref.Model, ref.Dir, name) {
		return format.Key{}, light.Pass, fuse.OK
	}
	f, err := shardOf(ref).Lookup(s.store, name)
	key := f.Key
	switch {
	case err != nil:
		return key, light.Pass, fuse.OK
	case f.Err == nil:
		h.fill(key, f.Info, s.inos.Peek(ino.FileName(key)), out)
		return key, light.Hit, fuse.OK
	case f.Missing() && !registry.Of(key).IsSidecar(key):
		// As the bridge answers a miss: cached for the negative TTL
		// unless missEntry set a timeout.
		errno := s.missEntry(f, out)
		if errno == errnoMissing && out.EntryTimeout() == 0 {
			out.SetEntryTimeout(s.opts.NegativeTTL)
			return key, light.Answered, fuse.OK
		}
		return key, light.Answered, fuse.Status(errno)
	}
	return key, light.Pass, fuse.OK
}

// Listing is the shard's listing for uid: its dots, then
// vfs.Shard.Listing, as the shard node's Readdir lists it.
func (h lightHost) Listing(ref light.Ref, uid uint32) []light.Entry {
	list := shardOf(ref).Listing(h.s.store, h.s.inos, uid)
	out := make([]light.Entry, 0, 2+len(list))
	for _, e := range dots(0, h.s.modelIno(ref.Model)) {
		out = append(out, light.Entry{Name: e.Name, Ino: e.Ino, Dir: true})
	}
	for _, e := range list {
		out = append(out, light.Entry{Name: e.Name, Ino: e.Ino, Key: e.Key, Published: e.Published})
	}
	return out
}

// Entry fills out with published file key's entry from the index.
func (h lightHost) Entry(key format.Key, out *fuse.EntryOut) bool {
	bi, err := h.s.store.Tiers().Stat(key)
	if err != nil {
		return false
	}
	h.fill(key, bi, h.s.inos.Peek(ino.FileName(key)), out)
	return true
}

// fill fills out as a lookup of key's go-fuse node would (bi from the
// index, ino its number).
func (h lightHost) fill(key format.Key, bi store.BlockInfo, ino uint64, out *fuse.EntryOut) {
	h.s.publishedAttr(key, bi, out)
	out.Attr.Ino = ino
	h.s.bridgeAttr(&out.Attr)
}

// Attr fills out with the attributes of published file key from the
// index, as GETATTR of its go-fuse node would.
func (h lightHost) Attr(key format.Key, out *fuse.AttrOut) bool {
	s := h.s
	bi, err := s.store.Tiers().Stat(key)
	if err != nil {
		return false
	}
	s.blockAttr(&out.Attr, bi.Size, bi.MTime, key)
	out.SetTimeout(s.opts.EntryTTL)
	out.Ino = s.inos.Peek(ino.FileName(key))
	s.bridgeAttr(&out.Attr)
	return true
}

// HoldListing charges uid the names of a shard's listing an open
// directory takes (vfs/user_budget.go).
func (h lightHost) HoldListing(uid uint32, n int) fuse.Status {
	if err := h.s.listed.Hold(uid, vfs.ListingCharge(n)); err != nil {
		return fuse.Status(h.s.fail("readdir", "a shard directory", err))
	}
	return fuse.OK
}

// FreeListing gives back what HoldListing charged.
func (h lightHost) FreeListing(uid uint32, n int) { h.s.listed.Free(uid, vfs.ListingCharge(n)) }

// HoldOpen charges uid an open directory as one of its open files
// (vfs/user_budget.go).
func (h lightHost) HoldOpen(uid uint32) fuse.Status {
	if err := h.s.reading.Hold(uid, 1); err != nil {
		return fuse.Status(h.s.fail("opendir", "a directory", err))
	}
	return fuse.OK
}

// FreeOpen gives back what HoldOpen charged.
func (h lightHost) FreeOpen(uid uint32) { h.s.reading.Free(uid, 1) }

// Handed counts a light node given to the kernel against the bound on
// kernel nodes.
func (h lightHost) Handed(id uint64) { h.s.kernel.AddLight(id) }

// bridgeAttr applies what go-fuse's bridge adds to the attributes it
// passes on: a mode with no permission bits shows 0644, owner 0 shows the
// mount's.
func (s *fsState) bridgeAttr(a *fuse.Attr) {
	if a.Mode&0o7777 == 0 {
		a.Mode |= 0o644
	}
	if s.uid != 0 && a.Uid == 0 {
		a.Uid = s.uid
	}
	if s.gid != 0 && a.Gid == 0 {
		a.Gid = s.gid
	}
}

// Flock takes or drops the flock lock of node, a node that keeps none by
// name (a directory, a control file): a lock of its own, by node id, as
// the kernel kept it (vfs/flock.go).
func (h lightHost) Flock(cancel <-chan struct{}, caller fuse.Caller, node, owner uint64, typ uint32, wait bool) fuse.Status {
	ctx := &fuse.Context{Caller: caller, Cancel: cancel}
	return fuse.Status(h.s.flockSet(ctx, "node\x00"+strconv.FormatUint(node, 10), owner, typ, wait))
}

// FlockRelease drops the flock locks of owner, an open file closed for
// good.
func (h lightHost) FlockRelease(owner uint64) { h.s.flocks.Release(owner) }
