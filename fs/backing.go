package fs

import (
	"context"
	"os"
	"sync"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// Passthrough backing ids the daemon registers itself
//
// go-fuse registers a node's backing file at its first open and
// unregisters it at its last release. A published file keeps its
// descriptor for a while after the last close (opencache.go), and its
// backing id with it, so the daemon registers the descriptor itself and
// hands the id to the kernel in the OPEN reply: rawFS wraps go-fuse's
// node bridge and, after the node's Open, writes the id its node left for
// the request (keyed by the request's cancel channel, which is the
// request's own while it runs).

// backingIDs passes backing ids from a node's Open to rawFS.Open.
type backingIDs struct {
	mu sync.Mutex
	m  map[<-chan struct{}]int32
}

// register registers f as a passthrough backing file; 0 when the mount
// does not use passthrough or the kernel refused (the handle then falls
// back to go-fuse's own registration).
func (s *fsState) register(f *os.File) int32 {
	srv := s.server.Load()
	if !s.passthrough.Load() || srv == nil {
		return 0
	}
	id, errno := srv.RegisterBackingFd(&fuse.BackingMap{Fd: int32(f.Fd())})
	if errno != 0 {
		s.log.Debug("registering a backing file", "errno", errno)
		return 0
	}
	return id
}

// closeBacking unregisters st's backing id and closes its descriptor
// (under its node's mu, refs 0).
func (s *fsState) closeBacking(st *openState) {
	if st.backingID != 0 {
		if errno := s.server.Load().UnregisterBackingFd(st.backingID); errno != 0 {
			s.log.Debug("unregistering a backing file", "errno", errno)
		}
	}
	st.backing.Close()
	st.backing, st.backingID, st.idle = nil, 0, 0
}

// give leaves id for the OPEN request of ctx; it reports false when ctx
// is not a request's (the caller lets go-fuse register the file).
func (b *backingIDs) give(ctx context.Context, id int32) bool {
	c, ok := ctx.(*fuse.Context)
	if !ok || c.Cancel == nil || id == 0 {
		return false
	}
	b.mu.Lock()
	if b.m == nil {
		b.m = make(map[<-chan struct{}]int32)
	}
	b.m[c.Cancel] = id
	b.mu.Unlock()
	return true
}

// take returns and forgets the id left for the request of cancel.
func (b *backingIDs) take(cancel <-chan struct{}) int32 {
	b.mu.Lock()
	defer b.mu.Unlock()
	id, ok := b.m[cancel]
	if ok {
		delete(b.m, cancel)
	}
	return id
}

// rawFS is go-fuse's node bridge with OPEN replies carrying the backing
// ids the nodes registered.
type rawFS struct {
	fuse.RawFileSystem
	s *fsState
}

// newRawFS wraps the node bridge of root.
func newRawFS(s *fsState, root gofs.InodeEmbedder, opts *gofs.Options) *rawFS {
	return &rawFS{RawFileSystem: gofs.NewNodeFS(root, opts), s: s}
}

// Init keeps the server, which registers backing files and sends
// notifications.
func (r *rawFS) Init(srv *fuse.Server) {
	r.s.server.Store(srv)
	r.RawFileSystem.Init(srv)
}

// Open opens through the bridge, then answers with the node's backing id.
func (r *rawFS) Open(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	status := r.RawFileSystem.Open(cancel, in, out)
	if id := r.s.backing.take(cancel); id != 0 && status == fuse.OK {
		out.BackingID = id
		out.OpenFlags |= fuse.FOPEN_PASSTHROUGH
		out.OpenFlags &^= fuse.FOPEN_KEEP_CACHE | fuse.FOPEN_DIRECT_IO
	}
	return status
}
