package vfs

import (
	"hash/maphash"
	"path"
	"sync/atomic"
	"time"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/fs/ino"
	"github.com/ucmfs/ucmfs/layout"
	"github.com/ucmfs/ucmfs/layout/registry"
	"github.com/ucmfs/ucmfs/store"
)

// The directories whose listing the kernel may cache, and the times of
// the last changes of what they hold (their mtimes). CachedListings
// (cached_listings.go) registers the cached listings; the adapter
// (fs/dir_cache.go) drops the kernel's copies.

// ListingKey names a directory whose listing the kernel may cache: a
// ucmb model's shard (its index shard), or a files model's directory (its
// path in the model).
type ListingKey struct {
	model string
	shard byte
	dir   string
	files bool
}

// ShardListingKey names shard sh of ucmb model model.
func ShardListingKey(model string, sh byte) ListingKey {
	return ListingKey{model: model, shard: sh}
}

// FilesListingKey names directory dir of files model model.
func FilesListingKey(model, dir string) ListingKey {
	return ListingKey{model: model, dir: dir, files: true}
}

// Files reports whether lk names a files model's directory.
func (lk ListingKey) Files() bool { return lk.files }

// ListingOf names the directory whose listing a change of key changes.
func ListingOf(key format.Key) ListingKey {
	if registry.Of(key).Tree() {
		return FilesListingKey(key.Model, key.ShardDir())
	}
	return ShardListingKey(key.Model, key.ID[0])
}

// ListingClock keeps the time of the last change of each cached directory's
// content (ListingKey), in nanoseconds, for the directory's mtime.
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
// The times live in a fixed table of slots hashed by model and shard (or
// directory), so the table has a bound whatever models and directories
// come and go; two directories sharing a slot only make a listing look
// changed when it is not (one refetch).
type ListingClock [4096]atomic.Int64

// shardSeed hashes ListingClock's slots.
var shardSeed = maphash.MakeSeed()

func (c *ListingClock) slot(lk ListingKey) *atomic.Int64 {
	h := maphash.String(shardSeed, lk.model) ^ uint64(lk.shard)*0x9e3779b97f4a7c15
	if lk.files {
		h ^= maphash.String(shardSeed, lk.dir) * 0xc2b2ae3d27d4eb4f
	}
	return &c[h%uint64(len(c))]
}

// Touch moves the directory's time to now, and past its last value.
func (c *ListingClock) Touch(lk ListingKey) {
	sl := c.slot(lk)
	now := time.Now().UnixNano()
	for {
		old := sl.Load()
		if sl.CompareAndSwap(old, max(now, old+1)) {
			return
		}
	}
}

// Get is the directory's last change time, 0 when it has not changed this
// run.
func (c *ListingClock) Get(lk ListingKey) int64 { return c.slot(lk).Load() }

// CacheableFilesDir reports whether directory dir of files model model,
// opened now, may have its listing cached by the kernel: no file is
// being written in it, and no tier is shared (a subdirectory another
// daemon makes there passes through no index of this one).
func CacheableFilesDir(st *store.Store, model, dir string) bool {
	return !st.Writes().InShard(model, dir) && !st.Tiers().HasShared()
}

// CacheableShard reports whether shard directory dir of model, opened
// now, may have its listing cached by the kernel: a ucmb model's shard
// (of the 256 always there, layout.HexShards) with no file being written
// in it.
func CacheableShard(st *store.Store, model, dir string) bool {
	return st.Models().LayoutOf(model).Dirs() == layout.HexShards && !st.Writes().InShard(model, dir)
}

// FilesDirInos are the numbers inos holds of directory dir of files
// model model ("" its root, the model's directory, whose parent is the
// mount's root, numbered root) and of its parent.
func FilesDirInos(inos *ino.Table, model, dir string, root uint64) (self, parent uint64) {
	if dir == "" {
		return inos.Peek(ino.ModelName(model)), root
	}
	self = inos.Peek(ino.DirName(model, dir))
	if up := path.Dir(dir); up != "." {
		return self, inos.Peek(ino.DirName(model, up))
	}
	return self, inos.Peek(ino.ModelName(model))
}
