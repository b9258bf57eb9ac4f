package fs

import (
	"context"
	"errors"
	"fmt"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/store"
	"github.com/ucmfs/ucmfs/vfs"
)

// Files being written, as the kernel sees them. The rules (who publishes
// a file and when, staging names, renames) are the store's (store.Draft,
// store/writes.go); here a file being written is a node and each open
// descriptor a handle.

// pendingNode is a file being written, as its writers see it. It has a
// number of its own (tag 5), so no two files being written share a node
// or a kernel backing file.
type pendingNode struct {
	gofs.Inode
	common
	w *store.Draft
}

var (
	_ = (gofs.NodeGetattrer)((*pendingNode)(nil))
	_ = (gofs.NodeSetattrer)((*pendingNode)(nil))
	_ = (gofs.NodeOpener)((*pendingNode)(nil))
	_ = (gofs.NodeGetxattrer)((*pendingNode)(nil))
)

// draftOf is the file a request on the node is about: the one the
// descriptor f writes (an open of the node may have started the next
// version of a File, Open below); else, once the node's file is done, the
// caller's next version of it, if it writes one; else the node's.
func (p *pendingNode) draftOf(ctx context.Context, f gofs.FileHandle) *store.Draft {
	if h, ok := f.(*writeHandle); ok {
		return h.d.Draft()
	}
	return vfs.DraftOf(p.s.store, p.w, callerProc(ctx).Tgid)
}

// Getattr describes the file as written so far (never cached).
func (p *pendingNode) Getattr(ctx context.Context, f gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	p.s.writeAttr(p.draftOf(ctx, f), &out.Attr)
	return 0
}

// Setattr applies to the file being written (see fsState.setWriting). By
// path (a truncate) of one that published or was discarded meanwhile
// (its writer's close, or its last release), it is ESTALE: the name's
// file is the published one now, and the kernel looks the name up again
// and sends the truncate there (truncate(2) retries on ESTALE), where it
// answered 0 and the truncate was lost.
func (p *pendingNode) Setattr(ctx context.Context, f gofs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	w := p.draftOf(ctx, f)
	errno, published := p.s.setWriting(w, in, out)
	switch {
	case published && f == nil:
		return errnoStale
	case published:
		return p.s.fail("setattr", w.Key().Path(), vfs.ErrPublished)
	}
	return errno
}

// Open of a file being written by a process that sees it adds a
// descriptor to it, for writing or reading back.
//
// A file published (or discarded) since the lookup that found it being
// written is ESTALE: the kernel then looks the name up again, finds the
// published file (or nothing), and opens that. An empty file publishes at
// its last release, which the kernel sends after close returns: a
// process that creates a lock file and opens it again at once meets this.
// An open for writing of a File of a files model published since is its
// next version, opened here (a loop of opens for appending meets this:
// the kernel looked the name up before the last close's release ended
// the file, and an ESTALE here would meet the published file's own,
// rewrite, on the retry, and reach the caller: vfs.OpenDraft).
func (p *pendingNode) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	key := p.w.Key()
	d, reopened, err := vfs.OpenDraft(p.s.store, p.w, callerProc(ctx), flags&syscall.O_TRUNC != 0, flags&syscall.O_ACCMODE != syscall.O_RDONLY)
	switch {
	case reopened && err != nil:
		return nil, 0, p.s.fail("open", key.Path(), err)
	case errors.Is(err, store.ErrDone):
		p.s.log.Debug("open of a file published meanwhile: the kernel looks it up again", "path", key.Path(), "errno", "ESTALE")
		return nil, 0, errnoStale
	case err != nil:
		return nil, 0, p.s.fail("open", key.Path(), fmt.Errorf("%w (%w)", err, vfs.ErrReadOnly))
	}
	h := p.s.newWriteHandle(d, key, callerProc(ctx).Uid, flags)
	if !reopened {
		p.s.reopens.Take(callerProc(ctx).Tgid, key) // a new version's retried open (vfs/reopen.go)
	}
	return h, h.openFlags(), 0
}

// beginWrite opens a descriptor on the file name (key; a staging name
// when staging is set) that p writes, starting it if there is none
// (vfs.BeginWrite).
func (s *fsState) beginWrite(p store.Proc, key format.Key, name string, staging bool, flags uint32) (*store.Draft, *writeHandle, syscall.Errno) {
	m := store.OpenMode{Staging: staging, Excl: flags&syscall.O_EXCL != 0, Trunc: flags&syscall.O_TRUNC != 0, Direct: flags&syscall.O_DIRECT != 0}
	w, d, err := vfs.BeginWrite(s.store, p, key, name, m)
	if err != nil {
		return nil, nil, s.refuse("create", key.Path(), err)
	}
	return w, s.newWriteHandle(d, key, p.Uid, flags), 0
}

// writeHandle is one open descriptor of a file being written.
type writeHandle struct {
	s   *fsState
	d   *store.Writer
	key format.Key
	pt  bool // the kernel writes the file itself (passthrough; vfs.Options.WritePassthrough)
	// direct: the kernel writes the file's O_DIRECT descriptor (a file
	// staged on disk, opened O_DIRECT: tiers.Stack.CreateOnDisk).
	direct bool
}

// newWriteHandle is a descriptor of d, opened by a process of uid with
// open flags flags. Of a file staged on disk, only a descriptor opened
// O_DIRECT is written by the kernel, through the O_DIRECT descriptor of
// the file: the daemon serves the writes of the others (the kernel keeps
// one backing file per node, the first one given, so a second descriptor
// opened while an O_DIRECT one is open is written O_DIRECT too).
func (s *fsState) newWriteHandle(d *store.Writer, key format.Key, uid uint32, flags uint32) *writeHandle {
	h := &writeHandle{s: s, d: d, key: key, pt: s.backing.Active() && s.opts.WritePassthrough(uid, s.uid)}
	if d.OnDisk() {
		h.direct = flags&syscall.O_DIRECT != 0
		h.pt = h.pt && h.direct
	}
	return h
}

// openFlags are the FOPEN flags of the descriptor: none when the kernel
// writes the file itself, else direct I/O (every write seen).
func (h *writeHandle) openFlags() uint32 {
	if h.pt {
		return 0
	}
	return fuse.FOPEN_DIRECT_IO
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

// Write writes at any offset; past MaxFileSize it is EFBIG. A write to a
// file unlinked meanwhile is accepted and dropped.
func (h *writeHandle) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	h.s.daemonWrites.Add(1)
	n, err := h.d.WriteAt(data, off)
	if err != nil {
		return uint32(n), h.s.fail("write", h.key.Path(), err)
	}
	return uint32(n), 0
}

// Read reads back what was written (a descriptor opened O_RDWR).
func (h *writeHandle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	n, err := h.d.ReadAt(dest, off)
	if errors.Is(err, store.ErrDone) {
		return nil, errnoBadFD
	}
	if err != nil {
		return nil, h.s.fail("read", h.key.Path(), err)
	}
	return fuse.ReadResultData(dest[:n]), 0
}

// Allocate preallocates (fallocate) within MaxFileSize.
func (h *writeHandle) Allocate(ctx context.Context, off, size uint64, mode uint32) syscall.Errno {
	if err := h.d.Allocate(off, size, mode); err != nil {
		return h.s.fail("fallocate", h.key.Path(), err)
	}
	return 0
}

// PassthroughFd hands the kernel the file being written.
func (h *writeHandle) PassthroughFd() (int, bool) {
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
func (h *writeHandle) Flush(ctx context.Context) syscall.Errno {
	p := callerProc(ctx)
	published, err := h.d.Close(ctx, p.Tgid)
	if published && err == nil {
		h.s.notifyReplacedBy(p.Uid, h.d.Draft().Key())
	}
	return h.verdict("close", published, err)
}

// Fsync publishes and returns once the block is durable on the first
// persistent tier; a staging file is kept until its rename, which
// publishes it durable.
func (h *writeHandle) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	published, err := h.d.Sync(ctx, h.pt)
	if published && err == nil {
		h.s.notifyReplacedBy(callerProc(ctx).Uid, h.d.Draft().Key())
	}
	return h.verdict("fsync", published, err)
}

// verdict turns a publish's verdict into the errno of the close or fsync,
// logging it when this call published.
func (h *writeHandle) verdict(op string, published bool, err error) syscall.Errno {
	if err = vfs.Verdict(err); err == nil {
		return 0
	}
	if published {
		return h.s.fail(op, h.key.Path(), err)
	}
	return toErrno(err)
}

// Release ends the descriptor (store.Writer.Release). The last
// descriptor of an O_TMPFILE file never linked discards it: nothing can
// name it any more.
func (h *writeHandle) Release(ctx context.Context) syscall.Errno {
	w := h.d.Draft()
	if h.d.Release(ctx) {
		h.s.notifyReplaced(w.Key()) // published by this release (an empty file, or one written late)
	}
	if vfs.IsTmpfileName(w.Name()) && w.Unheld() {
		w.Discard()
	}
	return 0
}

// writeAttr describes a file being written as its writers see it
// (vfs.DraftAttr): mode 0644 and its writer's owner while it is written,
// 0444 once published.
func (s *fsState) writeAttr(w *store.Draft, a *fuse.Attr) {
	size, mtime, published := vfs.DraftAttr(s.store, w)
	if published {
		s.blockAttr(a, size, mtime, w.Key())
		return
	}
	s.fileAttr(a, size, mtime, 0o644)
	a.Owner = fuse.Owner{Uid: w.Owner().Uid, Gid: w.Owner().Gid}
}

// setWriting applies a setattr to a file being written (vfs.SetWriting);
// when w was published before the change took it changes nothing, logs
// nothing and reports published.
func (s *fsState) setWriting(w *store.Draft, in *fuse.SetAttrIn, out *fuse.AttrOut) (errno syscall.Errno, published bool) {
	published, err := vfs.SetWriting(w, setAttrOf(in))
	if err != nil {
		return s.fail("setattr", w.Key().Path(), err), false
	}
	if published {
		return 0, true
	}
	s.writeAttr(w, &out.Attr)
	return 0, false
}
