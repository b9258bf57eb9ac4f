package pending

import (
	"context"
	"errors"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/store"
	"github.com/ucmfs/ucmfs/vfs"
)

// Handle is one open descriptor of a file being written.
type Handle struct {
	x   *Files
	d   *store.Writer
	key format.Key
	pt  bool // the kernel writes the file itself (passthrough; vfs.Options.WritePassthrough)
	// direct: the kernel writes the file's O_DIRECT descriptor (a file
	// staged on disk, opened O_DIRECT: tiers.Stack.CreateOnDisk).
	direct bool
}

// NewHandle is a descriptor of d, opened by a process of uid with
// open flags flags. Of a file staged on disk, only a descriptor opened
// O_DIRECT is written by the kernel, through the O_DIRECT descriptor of
// the file: the daemon serves the writes of the others (the kernel keeps
// one backing file per node, the first one given, so a second descriptor
// opened while an O_DIRECT one is open is written O_DIRECT too).
func (x *Files) NewHandle(d *store.Writer, key format.Key, uid uint32, flags uint32) *Handle {
	h := &Handle{x: x, d: d, key: key, pt: x.Host.WritePassthrough(uid)}
	if d.OnDisk() {
		h.direct = flags&syscall.O_DIRECT != 0
		h.pt = h.pt && h.direct
	}
	return h
}

// OpenFlags are the FOPEN flags of the descriptor: none when the kernel
// writes the file itself, else direct I/O (every write seen).
func (h *Handle) OpenFlags() uint32 {
	if h.pt {
		return 0
	}
	return fuse.FOPEN_DIRECT_IO
}

var (
	_ = (gofs.FileWriter)((*Handle)(nil))
	_ = (gofs.FileReader)((*Handle)(nil))
	_ = (gofs.FilePassthroughFder)((*Handle)(nil))
	_ = (gofs.FileFlusher)((*Handle)(nil))
	_ = (gofs.FileFsyncer)((*Handle)(nil))
	_ = (gofs.FileReleaser)((*Handle)(nil))
	_ = (gofs.FileAllocater)((*Handle)(nil))
	_ = (gofs.FileSetlker)((*Handle)(nil))
	_ = (gofs.FileSetlkwer)((*Handle)(nil))
)

// Write writes at any offset; past MaxFileSize it is EFBIG. A write to a
// file unlinked meanwhile is accepted and dropped.
func (h *Handle) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	h.x.Writes.Add(1)
	n, err := h.d.WriteAt(data, off)
	if err != nil {
		return uint32(n), h.x.Host.Fail("write", h.key.Path(), err)
	}
	return uint32(n), 0
}

// Read reads back what was written (a descriptor opened O_RDWR).
func (h *Handle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	n, err := h.d.ReadAt(dest, off)
	if errors.Is(err, store.ErrDone) {
		return nil, h.x.Errnos.BadFD
	}
	if err != nil {
		return nil, h.x.Host.Fail("read", h.key.Path(), err)
	}
	return fuse.ReadResultData(dest[:n]), 0
}

// Allocate preallocates (fallocate) within MaxFileSize.
func (h *Handle) Allocate(ctx context.Context, off, size uint64, mode uint32) syscall.Errno {
	if err := h.d.Allocate(off, size, mode); err != nil {
		return h.x.Host.Fail("fallocate", h.key.Path(), err)
	}
	return 0
}

// PassthroughFd hands the kernel the file being written.
func (h *Handle) PassthroughFd() (int, bool) {
	if h.direct {
		if f := h.d.DirectFile(); f != nil {
			return int(f.Fd()), h.pt
		}
		return -1, false
	}
	return int(h.d.File().Fd()), h.pt
}

// Flush is a close() of the descriptor (store.Writer.Close): the close that
// publishes returns the verdict (0 published or already present, EINVAL
// invalid, ENOSPC no room, EFBIG too large, EDQUOT over the quota, ENOENT
// a sidecar without its block), logged once; the others return the
// verdict so far.
func (h *Handle) Flush(ctx context.Context) syscall.Errno {
	p := h.x.Host.Caller(ctx)
	published, err := h.d.Close(ctx, p.Tgid)
	if published && err == nil {
		h.x.Host.Replaced(p.Uid, h.d.Draft().Key())
	}
	return h.verdict("close", published, err)
}

// Fsync publishes and returns once the block is durable on the first
// persistent tier; a staging file is kept until its rename, which
// publishes it durable.
func (h *Handle) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	published, err := h.d.Sync(ctx, h.pt)
	if published && err == nil {
		h.x.Host.Replaced(h.x.Host.Caller(ctx).Uid, h.d.Draft().Key())
	}
	return h.verdict("fsync", published, err)
}

// verdict turns a publish's verdict into the errno of the close or fsync,
// logging it when this call published.
func (h *Handle) verdict(op string, published bool, err error) syscall.Errno {
	if err = vfs.Verdict(err); err == nil {
		return 0
	}
	if published {
		return h.x.Host.Fail(op, h.key.Path(), err)
	}
	return h.x.Host.Errno(err)
}

// Release ends the descriptor (store.Writer.Release). The last
// descriptor of an O_TMPFILE file never linked discards it: nothing can
// name it any more.
func (h *Handle) Release(ctx context.Context) syscall.Errno {
	w := h.d.Draft()
	if h.d.Release(ctx) {
		h.x.Host.ReplacedLater(w.Key()) // published by this release (an empty file, or one written late)
	}
	if vfs.IsTmpfileName(w.Name()) && w.Unheld() {
		w.Discard()
	}
	return 0
}

// Setlk and Setlkw of a descriptor of a file being written (flock:
// Host.Flock).
func (h *Handle) Setlk(ctx context.Context, owner uint64, lk *fuse.FileLock, flags uint32) syscall.Errno {
	return h.x.Host.Flock(ctx, h.d.Draft().Key(), owner, lk, flags, false)
}
func (h *Handle) Setlkw(ctx context.Context, owner uint64, lk *fuse.FileLock, flags uint32) syscall.Errno {
	return h.x.Host.Flock(ctx, h.d.Draft().Key(), owner, lk, flags, true)
}
