package fs

import (
	"context"
	"errors"
	"io"
	"os"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// readHandle is a published file open for reading. With passthrough the
// kernel reads the backing descriptor itself and Read is never called;
// without, Read serves each request with one pread.
type readHandle struct {
	node *storedFile
	f    *os.File // the node's shared descriptor
	own  bool     // the OPEN reply carries the node's own backing id (light.Backing)
	uid  uint32   // the opener, charged one open file (vfs/user_budget.go)
}

var (
	_ = (gofs.FileReader)((*readHandle)(nil))
	_ = (gofs.FilePassthroughFder)((*readHandle)(nil))
	_ = (gofs.FileFlusher)((*readHandle)(nil))
	_ = (gofs.FileFsyncer)((*readHandle)(nil))
	_ = (gofs.FileReleaser)((*readHandle)(nil))
)

// Read reads at any offset and length; past the end it reads nothing.
func (h *readHandle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	h.node.s.daemonReads.Add(1)
	n, err := h.f.ReadAt(dest, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, h.node.s.fail("read", h.node.key.Path(), err)
	}
	return fuse.ReadResultData(dest[:n]), 0
}

// PassthroughFd hands go-fuse the shared descriptor to register when the
// mount uses passthrough and the node did not register it itself.
func (h *readHandle) PassthroughFd() (int, bool) {
	return int(h.f.Fd()), h.node.s.backing.Active() && !h.own
}

// Flush has nothing to do for a reader. It must exist: a FLUSH answered
// ENOSYS once makes the kernel stop sending FLUSH on the whole mount,
// and close of a written file would no longer publish.
func (h *readHandle) Flush(ctx context.Context) syscall.Errno { return 0 }

// Fsync makes the block durable on the first persistent tier.
func (h *readHandle) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	key := h.node.served()
	if err := h.node.s.store.Tiers().Flush(ctx, key); err != nil {
		return h.node.s.fail("fsync", key.Path(), err)
	}
	return 0
}

// Release drops the handle's use of the shared descriptor.
func (h *readHandle) Release(ctx context.Context) syscall.Errno {
	h.node.s.reading.Free(h.uid, 1)
	h.node.release()
	return 0
}

// openFlags are the FOPEN flags of every open block or sidecar: none with
// passthrough (FOPEN_DIRECT_IO would override it), else direct I/O so
// reads of any size go straight to the daemon in up to 1 MiB requests.
func (s *fsState) openFlags() uint32 {
	if s.backing.Active() {
		return 0
	}
	return fuse.FOPEN_DIRECT_IO
}
