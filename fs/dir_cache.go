package fs

import (
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/ucmfs/ucmfs/fs/light"
	"github.com/ucmfs/ucmfs/vfs"
)

// Cached listings of shard directories (docs/design.md, "Cached
// listings"): the registry, and why it works as it does, is
// vfs.CachedListings; what is here grants a shard's cached listing and
// tells the kernel to drop one.

// CacheListing grants a cached listing to shard ref opened now
// (vfs.CacheableShard).
func (h lightHost) CacheListing(ref light.Ref, node uint64) bool {
	s := h.s
	if !vfs.CacheableShard(s.store, ref.Model, ref.Dir) {
		return false
	}
	s.listings.Opened(vfs.ShardListingKey(ref.Model, ref.Shard), nil, func() { s.invalidateListing(node) })
	return true
}

// ListingTaken follows the cached listing of shard ref from now on.
func (h lightHost) ListingTaken(ref light.Ref, node uint64) {
	h.s.listings.Taken(vfs.ShardListingKey(ref.Model, ref.Shard), nil, func() { h.s.invalidateListing(node) })
}

// shardAttr fills the attributes of ucmb shard directory shard of model:
// its model's, with the time of the last change of what it holds as its
// mtime and ctime.
func (s *fsState) shardAttr(a *fuse.Attr, model string, shard byte) {
	s.modelAttr(a, 2, model)
	s.listingTime(a, vfs.ShardListingKey(model, shard))
}

// listingTime sets the mtime and ctime of the directory lk to the time of
// the last change of what it holds, if it changed this run.
func (s *fsState) listingTime(a *fuse.Attr, lk vfs.ListingKey) {
	if ns := s.listings.Time(lk); ns != 0 {
		a.Mtime, a.Mtimensec = uint64(ns/1e9), uint32(ns%1e9)
		a.Ctime, a.Ctimensec = a.Mtime, a.Mtimensec
	}
}

// invalidateListing drops the kernel's cached listing of node.
func (s *fsState) invalidateListing(node uint64) {
	if srv := s.server.Load(); srv != nil {
		if st := srv.InodeNotify(node, 0, 0); !st.Ok() && st != fuse.ENOENT {
			s.log.Debug("listing invalidation", "node", node, "status", st)
		}
	}
}
