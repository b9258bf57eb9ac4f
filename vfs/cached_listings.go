package vfs

import (
	"sync"
	"sync/atomic"

	"github.com/ucmfs/ucmfs/format"
)

// Cached listings of shard directories (docs/design.md, "Cached
// listings"; a files model's directories: fs/filesdir/list.go). A shard
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
// index, whose observer calls Changed: the first change after a
// cached listing was taken invalidates the directory's content
// (FUSE_NOTIFY_INVAL_INODE) before the change returns, and forgets the
// flag, so one notification goes out per listing taken (more only for
// changes between the open and its listing). A listing taken again
// through the same open directory (a rewind, or the kernel refilling the
// cache it was told to drop) registers again (Taken): else a
// later change, with the flag forgotten, would leave the refilled cache
// stale for every later open. Every change also moves the directory's
// mtime (ListingClock), which the kernel compares at the start of each
// listing: that catches a notification that crossed the kernel's filling
// of the cache. It is sent under the index's lock: the kernel's
// invalidation of a directory's pages waits on no request (a readdir
// holds a page lock only while it copies names out, never while it waits
// for the daemon), so it cannot wait on this one.

// CachedListings are the directories whose listing the kernel may have
// cached, by ListingKey, each with the node N (of the adapter) that
// registered it, and the times of their last changes. The zero value is
// ready.
type CachedListings[N comparable] struct {
	m     sync.Map     // ListingKey -> *cachedListing[N]
	times ListingClock // the directories' mtimes
}

// cachedListing is a directory opened with a cached listing: how to drop
// the kernel's copy, and whether its listing was taken since (served).
type cachedListing[N comparable] struct {
	drop   func()
	served atomic.Bool
	// owner is the node of the files model's directory it is of (the
	// zero N for a shard): one path may have had several nodes (a
	// directory removed and made again, or moved over another), and a
	// node that goes forgets its own listing only (Forget).
	owner N
}

// Opened registers directory lk, opened now by owner with a cached
// listing; drop drops the kernel's copy.
func (c *CachedListings[N]) Opened(lk ListingKey, owner N, drop func()) {
	c.m.Store(lk, &cachedListing[N]{drop: drop, owner: owner})
}

// Forget drops the listing of lk that owner registered, if any.
func (c *CachedListings[N]) Forget(lk ListingKey, owner N) {
	if v, ok := c.m.Load(lk); ok && v.(*cachedListing[N]).owner == owner {
		c.m.CompareAndDelete(lk, v)
	}
}

// Taken records that the cached listing of directory lk is being
// taken: the first change from now on drops what the kernel caches of it
// (drop). It registers the listing anew, served, since a change may have
// dropped and forgotten the one its open registered, and the kernel
// refills its cache through the same open directory.
func (c *CachedListings[N]) Taken(lk ListingKey, owner N, drop func()) {
	l := &cachedListing[N]{drop: drop, owner: owner}
	l.served.Store(true)
	c.m.Store(lk, l)
}

// Changed is the store's OnListingChange hook: what the directory of
// key holds changed, so a listing the kernel cached is stale. The
// directory's mtime moves first (ListingClock), so that the notification
// cannot be lost to a listing the kernel was filling meanwhile. A change
// between a cached open and its listing is notified and keeps the flag:
// the kernel may take the attributes it then asks for, and the listing,
// after the change, and only a later change would tell it otherwise.
func (c *CachedListings[N]) Changed(key format.Key) {
	lk := ListingOf(key)
	c.times.Touch(lk)
	v, ok := c.m.Load(lk)
	if !ok {
		return
	}
	l := v.(*cachedListing[N])
	if l.served.Load() {
		c.m.CompareAndDelete(lk, v)
	}
	l.drop()
}

// Time is the time of the last change of what directory lk holds, in
// nanoseconds, or 0 if it did not change this run (ListingClock.Get).
func (c *CachedListings[N]) Time(lk ListingKey) int64 { return c.times.Get(lk) }

// FilesDirs counts the registered listings of files models' directories.
func (c *CachedListings[N]) FilesDirs() int {
	n := 0
	c.m.Range(func(k, _ any) bool {
		if k.(ListingKey).Files() {
			n++
		}
		return true
	})
	return n
}
