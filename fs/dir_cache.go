package fs

import (
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
// cached open invalidates the directory's content (FUSE_NOTIFY_INVAL_INODE)
// before the change returns, and forgets the flag, so at most one
// notification goes out per cached open. It is sent under the index's
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
	s.listings.Store(listingKey{ref.Model, ref.Shard}, node)
	return true
}

// listingChanged is the store's OnListingChange hook: what the shard
// holds changed, so a listing the kernel cached is stale.
func (s *fsState) listingChanged(model string, shard byte) {
	if v, ok := s.listings.LoadAndDelete(listingKey{model, shard}); ok {
		s.invalidateListing(v.(uint64))
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
