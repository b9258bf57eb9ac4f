package fs

import (
	"sync/atomic"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/fs/light"
	"github.com/ucmfs/ucmfs/layout"
	"github.com/ucmfs/ucmfs/vfs"
)

// Cached listings of shard directories (docs/design.md, "Cached
// listings"; a files model's directories: files_list.go). A shard
// directory of a ucmb model opened while no file is being written in it
// is opened with FOPEN_CACHE_DIR and KEEP_CACHE: the kernel keeps its
// listing and answers the next getdents (a second `du`, `ls`) without a
// round trip. Such a listing holds the published files alone
// (light.NoUser), since the kernel serves it to every caller, and a
// caller's own staging files are private to it.
//
// The kernel drops the cache by itself at every change made through it
// (create, unlink, rename bump the directory's i_version). Every other
// change of what the shard holds (a publish at a close, eviction, a GPU
// dump, another daemon's file on a shared tier) passes through a tier's
// index, whose observer calls listingChanged: the first change after a
// cached listing was taken invalidates the directory's content
// (FUSE_NOTIFY_INVAL_INODE) before the change returns, and forgets the
// flag, so one notification goes out per listing taken (more only for
// changes between the open and its listing). A listing taken again
// through the same open directory (a rewind, or the kernel refilling the
// cache it was told to drop) registers again (listingTaken): else a
// later change, with the flag forgotten, would leave the refilled cache
// stale for every later open. Every change also moves the directory's
// mtime (vfs.ListingClock), which the kernel compares at the start of each
// listing: that catches a notification that crossed the kernel's filling
// of the cache. It is sent under the index's lock: the kernel's
// invalidation of a directory's pages waits on no request (a readdir
// holds a page lock only while it copies names out, never while it waits
// for the daemon), so it cannot wait on this one.

// CacheListing grants a cached listing to shard ref opened now: a ucmb
// model's shard (of the 256 always there, layout.HexShards) with no file
// being written in it.
func (h lightHost) CacheListing(ref light.Ref, node uint64) bool {
	s := h.s
	if s.store.Models().LayoutOf(ref.Model).Dirs() != layout.HexShards || s.store.Writes().InShard(ref.Model, ref.Dir) {
		return false
	}
	s.listings.Store(vfs.ShardListingKey(ref.Model, ref.Shard), &cachedListing{drop: func() { s.invalidateListing(node) }})
	return true
}

// cachedListing is a directory opened with a cached listing: how to drop
// the kernel's copy, and whether its listing was taken since (served).
type cachedListing struct {
	drop   func()
	served atomic.Bool
	// owner is the node of the files model's directory it is of (nil for
	// a shard): one path may have had several nodes (a directory removed
	// and made again, or moved over another), and a node that goes
	// forgets its own listing only (forgetListing).
	owner *gofs.Inode
}

// forgetListing drops the listing of lk that node registered, if any.
func (s *fsState) forgetListing(lk vfs.ListingKey, node *gofs.Inode) {
	if v, ok := s.listings.Load(lk); ok && v.(*cachedListing).owner == node {
		s.listings.CompareAndDelete(lk, v)
	}
}

// ListingTaken follows the cached listing of shard ref from now on.
func (h lightHost) ListingTaken(ref light.Ref, node uint64) {
	h.s.listingTaken(vfs.ShardListingKey(ref.Model, ref.Shard), nil, func() { h.s.invalidateListing(node) })
}

// listingTaken records that the cached listing of directory lk is being
// taken: the first change from now on drops what the kernel caches of it
// (drop). It registers the listing anew, served, since a change may have
// dropped and forgotten the one its open registered, and the kernel
// refills its cache through the same open directory.
func (s *fsState) listingTaken(lk vfs.ListingKey, owner *gofs.Inode, drop func()) {
	c := &cachedListing{drop: drop, owner: owner}
	c.served.Store(true)
	s.listings.Store(lk, c)
}

// listingChanged is the store's OnListingChange hook: what the
// directory of key holds changed, so a listing the kernel cached is
// stale. The directory's mtime moves first (vfs.ListingClock), so that the
// notification cannot be lost to a listing the kernel was filling
// meanwhile. A change between a cached open and its listing is notified
// and keeps the flag: the kernel may take the attributes it then asks
// for, and the listing, after the change, and only a later change would
// tell it otherwise.
func (s *fsState) listingChanged(key format.Key) {
	lk := vfs.ListingOf(key)
	s.shardTimes.Touch(lk)
	v, ok := s.listings.Load(lk)
	if !ok {
		return
	}
	c := v.(*cachedListing)
	if c.served.Load() {
		s.listings.CompareAndDelete(lk, v)
	}
	c.drop()
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
	if ns := s.shardTimes.Get(lk); ns != 0 {
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
