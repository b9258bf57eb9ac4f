package fs

import (
	"hash/maphash"
	"sync/atomic"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/ucmfs/ucmfs/fs/light"
	"github.com/ucmfs/ucmfs/store"
)

// Cached listings of shard directories (docs/design.md, "Cached
// listings"). A shard directory of a ucmb model opened while no file is
// being written in it is opened with FOPEN_CACHE_DIR and KEEP_CACHE: the
// kernel keeps its listing and answers the next getdents (a second `du`,
// `ls`) without a round trip. Such a listing holds the published files
// alone (light.NoUser), since the kernel serves it to every caller, and a
// caller's own staging files are private to it.
//
// The kernel drops the cache by itself at every change made through it
// (create, unlink, rename bump the directory's i_version). Every other
// change of what the shard holds (a publish at a close, eviction, a GPU
// dump, another daemon's file on a shared tier) passes through a tier's
// index, whose observer calls listingChanged: the first change after a
// cached open's listing was taken invalidates the directory's content
// (FUSE_NOTIFY_INVAL_INODE) before the change returns, and forgets the
// flag, so one notification goes out per cached open (more only for
// changes between the open and its listing). Every change also moves the
// shard directory's mtime (shardClock), which the kernel compares at the
// start of each listing: that catches a notification that crossed the
// kernel's filling of the cache. It is sent under the index's
// lock: the kernel's invalidation of a directory's pages waits on no
// request (a readdir holds a page lock only while it copies names out,
// never while it waits for the daemon), so it cannot wait on this one.

// listingKey names a shard directory: its model and index shard.
type listingKey struct {
	model string
	shard byte
}

// CacheListing grants a cached listing to shard ref opened now: a ucmb
// model's shard with no file being written in it.
func (h lightHost) CacheListing(ref light.Ref, node uint64) bool {
	s := h.s
	if s.store.Layout(ref.Model) != store.LayoutUCMB || s.store.WritingIn(ref.Model, ref.Dir) {
		return false
	}
	s.listings.Store(listingKey{ref.Model, ref.Shard}, &cachedListing{node: node})
	return true
}

// cachedListing is a shard directory opened with a cached listing: its
// node, and whether its listing was taken since (served).
type cachedListing struct {
	node   uint64
	served atomic.Bool
}

// listingServed records that the cached listing of shard ref is being
// taken: a change from now on is the kernel's to drop it for.
func (s *fsState) listingServed(ref light.Ref) {
	if v, ok := s.listings.Load(listingKey{ref.Model, ref.Shard}); ok {
		v.(*cachedListing).served.Store(true)
	}
}

// listingChanged is the store's OnListingChange hook: what the shard
// holds changed, so a listing the kernel cached is stale. The shard's
// mtime moves first (shardClock), so that the notification cannot be
// lost to a listing the kernel was filling meanwhile. A change between a
// cached open and its listing is notified and keeps the flag: the kernel
// may take the attributes it then asks for, and the listing, after the
// change, and only a later change would tell it otherwise.
func (s *fsState) listingChanged(model string, shard byte) {
	s.shardTimes.touch(model, shard)
	key := listingKey{model, shard}
	v, ok := s.listings.Load(key)
	if !ok {
		return
	}
	c := v.(*cachedListing)
	if c.served.Load() {
		s.listings.CompareAndDelete(key, v)
	}
	s.invalidateListing(c.node)
}

// shardAttr fills the attributes of ucmb shard directory shard of model:
// its model's, with the time of the last change of what it holds as its
// mtime and ctime.
func (s *fsState) shardAttr(a *fuse.Attr, model string, shard byte) {
	s.modelAttr(a, 2, model)
	if ns := s.shardTimes.get(model, shard); ns != 0 {
		a.Mtime, a.Mtimensec = uint64(ns/1e9), uint32(ns%1e9)
		a.Ctime, a.Ctimensec = a.Mtime, a.Mtimensec
	}
}

// shardClock keeps the time of the last change of each shard's content,
// in nanoseconds, for the shard directory's mtime.
//
// Why: the kernel fills a cached listing while it reads a READDIR answer,
// after the daemon answered. A change whose notification lands during
// that fill can be overwritten by it, and the first change after a
// cached open is the only one notified. But the kernel also checks, at
// the start of every listing (FUSE_AUTO_INVAL_DATA, on by default), the
// directory's mtime against the one it saw when it began filling, and
// the notification left the directory's attributes stale, so that check
// asks for them again: a moved mtime drops the cached listing however the
// notification and the fill interleaved.
//
// The times live in a fixed table of slots hashed by model and shard, so
// the table has a bound whatever models come and go; two shards sharing a
// slot only make a listing look changed when it is not (one refetch).
type shardClock [4096]atomic.Int64

// shardSeed hashes shardClock's slots.
var shardSeed = maphash.MakeSeed()

func (c *shardClock) slot(model string, shard byte) *atomic.Int64 {
	return &c[(maphash.String(shardSeed, model)^uint64(shard)*0x9e3779b97f4a7c15)%uint64(len(c))]
}

// touch moves the shard's time to now, and past its last value.
func (c *shardClock) touch(model string, shard byte) {
	sl := c.slot(model, shard)
	now := time.Now().UnixNano()
	for {
		old := sl.Load()
		if sl.CompareAndSwap(old, max(now, old+1)) {
			return
		}
	}
}

// get is the shard's last change time, 0 when it has not changed this run.
func (c *shardClock) get(model string, shard byte) int64 { return c.slot(model, shard).Load() }

// invalidateListing drops the kernel's cached listing of node.
func (s *fsState) invalidateListing(node uint64) {
	if srv := s.server.Load(); srv != nil {
		if st := srv.InodeNotify(node, 0, 0); !st.Ok() && st != fuse.ENOENT {
			s.log.Debug("listing invalidation", "node", node, "status", st)
		}
	}
}
