package fs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/ucmfs/ucmfs/store"
	"github.com/ucmfs/ucmfs/tiers"
	"golang.org/x/sys/unix"
)

// pendingNode is a file being written, as its writer sees it. It has a
// number of its own (tag 5), so no lookup ever reaches it and no two
// writers of one id share a node or a kernel backing file.
type pendingNode struct {
	gofs.Inode
	common
	h *writeHandle
}

var (
	_ = (gofs.NodeGetattrer)((*pendingNode)(nil))
	_ = (gofs.NodeSetattrer)((*pendingNode)(nil))
	_ = (gofs.NodeOpener)((*pendingNode)(nil))
	_ = (gofs.NodeGetxattrer)((*pendingNode)(nil))
)

// Getattr describes the file as written so far (never cached).
func (p *pendingNode) Getattr(ctx context.Context, f gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	p.h.fillAttr(&out.Attr)
	return 0
}

// Setattr applies to the file being written (see writeHandle.setattr).
func (p *pendingNode) Setattr(ctx context.Context, f gofs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	return p.h.setattr(in, out)
}

// Open of a file being written (through /proc/self/fd) is refused: it has
// exactly one writer.
func (p *pendingNode) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	return nil, 0, p.s.fail("open", p.h.key.Path(), fmt.Errorf("file is being written: %w", errReadOnly))
}

// writeHandle is a block or sidecar being written: a PendingWrite of the
// stack. With passthrough the kernel writes its file directly; else Write
// does one pwrite per request. The first close (FLUSH) or fsync publishes
// and its verdict is what every later close returns.
type writeHandle struct {
	s   *fsState
	key tiers.Key
	pw  *tiers.PendingWrite
	f   *os.File // pw.File(); closed by the stack once done is set

	mu      sync.RWMutex // writes hold it shared, publish exclusively
	done    bool         // published or discarded
	verdict syscall.Errno
	size    int64     // once done
	mtime   time.Time // once done
}

var (
	_ = (gofs.FileWriter)((*writeHandle)(nil))
	_ = (gofs.FileReader)((*writeHandle)(nil))
	_ = (gofs.FilePassthroughFder)((*writeHandle)(nil))
	_ = (gofs.FileFlusher)((*writeHandle)(nil))
	_ = (gofs.FileFsyncer)((*writeHandle)(nil))
	_ = (gofs.FileReleaser)((*writeHandle)(nil))
	_ = (gofs.FileAllocater)((*writeHandle)(nil))
)

// startWrite begins writing key. An id already published is EEXIST with
// O_EXCL and EACCES without; after StopWrites every write is EROFS.
func (s *fsState) startWrite(key tiers.Key, flags uint32) (*writeHandle, syscall.Errno) {
	if s.Stopped() {
		return nil, s.fail("create", key.Path(), fmt.Errorf("shutting down: %w", store.ErrStopped))
	}
	pw, err := s.stack.Create(key)
	if errors.Is(err, tiers.ErrExist) {
		if flags&syscall.O_EXCL == 0 {
			err = fmt.Errorf("%w: published files are read-only", errReadOnly)
		}
		return nil, s.debugFail("create", key.Path(), err)
	}
	if err != nil {
		return nil, s.fail("create", key.Path(), err)
	}
	s.WriteStarted(key)
	return &writeHandle{s: s, key: key, pw: pw, f: pw.File()}, 0
}

// Write writes at any offset; past Options.MaxFileSize it is EFBIG.
func (h *writeHandle) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if h.done {
		return 0, h.s.fail("write", h.key.Path(), fmt.Errorf("already published: %w", store.ErrImmutable))
	}
	if off+int64(len(data)) > h.s.MaxFileSize() {
		return 0, h.s.fail("write", h.key.Path(), fmt.Errorf("%d bytes at %d pass the %d-byte limit: %w", len(data), off, h.s.MaxFileSize(), store.ErrTooBig))
	}
	h.s.daemonWrites.Add(1)
	n, err := h.f.WriteAt(data, off)
	if err != nil {
		return uint32(n), h.s.fail("write", h.key.Path(), err)
	}
	return uint32(n), 0
}

// Read reads back what was written (a descriptor opened O_RDWR).
func (h *writeHandle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if h.done {
		return nil, errnoBadFD
	}
	n, err := h.f.ReadAt(dest, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, h.s.fail("read", h.key.Path(), err)
	}
	return fuse.ReadResultData(dest[:n]), 0
}

// Allocate preallocates (fallocate) within Options.MaxFileSize.
func (h *writeHandle) Allocate(ctx context.Context, off, size uint64, mode uint32) syscall.Errno {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if h.done {
		return h.s.fail("fallocate", h.key.Path(), store.ErrImmutable)
	}
	if off+size > uint64(h.s.MaxFileSize()) {
		return h.s.fail("fallocate", h.key.Path(), store.ErrTooBig)
	}
	if err := unix.Fallocate(int(h.f.Fd()), mode, int64(off), int64(size)); err != nil {
		return h.s.fail("fallocate", h.key.Path(), err)
	}
	return 0
}

// PassthroughFd hands the kernel the file being written.
func (h *writeHandle) PassthroughFd() (int, bool) {
	return int(h.f.Fd()), h.s.passthrough.Load()
}

// Flush (close) publishes and returns the verdict: 0 published or already
// present, EINVAL invalid (discarded), ENOSPC no room, EFBIG too large,
// EDQUOT over the model's quota, ENOENT a sidecar without its block.
func (h *writeHandle) Flush(ctx context.Context) syscall.Errno {
	return h.publish(ctx, false)
}

// Fsync publishes and returns once the block is durable on the first
// persistent tier.
func (h *writeHandle) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	return h.publish(ctx, true)
}

// Release discards what was never published and ends the write.
func (h *writeHandle) Release(ctx context.Context) syscall.Errno {
	h.mu.Lock()
	if !h.done {
		h.done = true
		h.s.stack.Abort(h.pw)
	}
	h.mu.Unlock()
	h.s.WriteEnded(h.key)
	return 0
}
