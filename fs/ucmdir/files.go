package ucmdir

import (
	"context"
	"encoding/json"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/ucmfs/ucmfs/control"
	"github.com/ucmfs/ucmfs/control/line"
	"github.com/ucmfs/ucmfs/store"
	"github.com/ucmfs/ucmfs/vfs"
)

// statsFile is .ucm/stats: a JSON snapshot of the stack's and the
// mount's counters (store.Store.Snapshot), taken at each open, read-only.
type statsFile struct {
	gofs.Inode
	Common
	x    *Config
	perm uint32 // its row's mode (0444)
}

var (
	_ = (gofs.NodeOpener)((*statsFile)(nil))
	_ = (gofs.NodeGetattrer)((*statsFile)(nil))
	_ = (gofs.NodeSetattrer)((*statsFile)(nil))
	_ = (gofs.NodeStatfser)((*statsFile)(nil))
)

// snapshot is the file's content now.
func (f *statsFile) snapshot() []byte {
	b, err := json.MarshalIndent(f.x.Store.Snapshot(), "", "  ")
	if err != nil {
		f.x.Log.Error("stats: encoding", "err", err)
		return nil
	}
	return append(b, '\n')
}

// Getattr describes the file; its size is that of a snapshot taken now
// (never cached: the size changes).
func (f *statsFile) Getattr(ctx context.Context, fh gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	size := len(f.snapshot())
	if h, ok := fh.(*bytesHandle); ok {
		size = len(h.data)
	}
	f.x.Host.FileAttr(&out.Attr, int64(size), time.Now(), f.perm)
	return 0
}

// Setattr is refused.
func (f *statsFile) Setattr(ctx context.Context, fh gofs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	return f.x.Host.Fail("setattr", ucmName+"/stats", store.ErrImmutable)
}

// Open takes the snapshot this descriptor reads; writing is EACCES. Any
// user may open it: each open counts as an open file of the opener
// (vfs/user_budget.go), as the snapshot is the daemon's memory.
func (f *statsFile) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	if flags&syscall.O_ACCMODE != syscall.O_RDONLY {
		return nil, 0, f.x.Host.Fail("open", ucmName+"/stats", line.ErrAccess)
	}
	uid := f.x.Host.Uid(ctx)
	if err := f.x.Open.Hold(uid, 1); err != nil {
		return nil, 0, f.x.Host.Fail("open", ucmName+"/stats", err)
	}
	return &bytesHandle{data: f.snapshot(), held: f.x.Open, uid: uid}, fuse.FOPEN_DIRECT_IO, 0
}

// bytesHandle reads a byte slice fixed at open; it gives back the open
// file held charges (if any) at its release.
type bytesHandle struct {
	data []byte
	held *vfs.UserBudget
	uid  uint32
}

var (
	_ = (gofs.FileReader)((*bytesHandle)(nil))
	_ = (gofs.FileFlusher)((*bytesHandle)(nil))
	_ = (gofs.FileReleaser)((*bytesHandle)(nil))
)

// Release gives back the open file the handle was charged.
func (h *bytesHandle) Release(ctx context.Context) syscall.Errno {
	if h.held != nil {
		h.held.Free(h.uid, 1)
	}
	return 0
}

// Read reads the snapshot at any offset.
func (h *bytesHandle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if off >= int64(len(h.data)) {
		return fuse.ReadResultData(nil), 0
	}
	return fuse.ReadResultData(h.data[off:min(int64(len(h.data)), off+int64(len(dest)))]), 0
}

// Flush has nothing to do (see package fs's readHandle.Flush for why it exists).
func (h *bytesHandle) Flush(ctx context.Context) syscall.Errno { return 0 }

// controlFile is the node of a session control file (package control):
// each open descriptor is one control.Session.
type controlFile struct {
	gofs.Inode
	Common
	x    *Config
	spec control.File
}

var (
	_ = (gofs.NodeOpener)((*controlFile)(nil))
	_ = (gofs.NodeGetattrer)((*controlFile)(nil))
	_ = (gofs.NodeSetattrer)((*controlFile)(nil))
	_ = (gofs.NodeAccesser)((*controlFile)(nil))
	_ = (gofs.NodeStatfser)((*controlFile)(nil))
)

// path names the file in logs.
func (f *controlFile) path() string { return ucmName + "/" + f.spec.Name }

// Getattr describes the file: size 0, mode 0600 for the mounting user, or
// 0660 with the control group (Options.ControlGroup).
func (f *controlFile) Getattr(ctx context.Context, fh gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	f.x.Host.FileAttr(&out.Attr, 0, f.x.Mounted, f.x.Access.Perm)
	out.Owner.Gid = f.x.Access.Gid
	return 0
}

// Setattr accepts a truncation to 0 (`echo req > file` opens with
// O_TRUNC) and new times (touch), which change nothing; chmod, chown and
// any other size are EPERM.
func (f *controlFile) Setattr(ctx context.Context, fh gofs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	sz, sized := in.GetSize()
	if in.Valid&(fuse.FATTR_MODE|fuse.FATTR_UID|fuse.FATTR_GID) != 0 || (sized && sz != 0) {
		return f.x.Host.Fail("setattr", f.path(), store.ErrImmutable)
	}
	return f.Getattr(ctx, fh, out)
}

// Access answers access(2) with the same rule as Open.
func (f *controlFile) Access(ctx context.Context, mask uint32) syscall.Errno {
	if mask&1 != 0 { // X_OK
		return f.x.Host.Errno(line.ErrAccess)
	}
	c, err := f.x.creds(ctx, false)
	if err == nil {
		c.Close()
	}
	return f.x.Host.Errno(err)
}

// Open starts a session. The opener must be the mounting user, root, or
// a member of the control group; the session keeps its credentials
// (controlCreds).
func (f *controlFile) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	c, err := f.x.creds(ctx, f.spec.Paths)
	if err != nil {
		return nil, 0, f.x.Host.Fail("open", f.path(), err)
	}
	if f.spec.Kind == control.Stream {
		es, err := f.x.Env.OpenEvents(c)
		if err != nil {
			return nil, 0, f.x.Host.Fail("open", f.path(), err)
		}
		return &eventsHandle{x: f.x, path: f.path(), es: es}, fuse.FOPEN_DIRECT_IO | fuse.FOPEN_NONSEEKABLE, 0
	}
	// A session of a file whose requests name paths holds two
	// descriptors of the daemon (the opener's root and working
	// directory, where a root daemon keeps them): they count as open
	// files of the opener.
	held := 0
	if c.Root() >= 0 {
		held = 2
		if err := f.x.Open.Hold(c.Uid, held); err != nil {
			c.Close()
			return nil, 0, f.x.Host.Fail("open", f.path(), err)
		}
	}
	ss, err := f.spec.OpenAs(f.x.Env, c)
	if err != nil {
		f.x.Open.Free(c.Uid, held)
		return nil, 0, f.x.Host.Fail("open", f.path(), err)
	}
	return &sessionHandle{x: f.x, path: f.path(), ss: ss, uid: c.Uid, held: held}, fuse.FOPEN_DIRECT_IO, 0
}

// sessionHandle is one open descriptor of a control file: the kernel's
// reads and writes of it are the session's (control.Session).
type sessionHandle struct {
	x    *Config
	path string
	ss   *control.Session
	uid  uint32 // the opener
	held int    // the open files it is charged (Config.Open)
}

var (
	_ = (gofs.FileReader)((*sessionHandle)(nil))
	_ = (gofs.FileWriter)((*sessionHandle)(nil))
	_ = (gofs.FileFlusher)((*sessionHandle)(nil))
	_ = (gofs.FileFsyncer)((*sessionHandle)(nil))
	_ = (gofs.FileReleaser)((*sessionHandle)(nil))
)

// Write takes request bytes at any offset; the session answers every line
// they complete.
func (h *sessionHandle) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	n, err := h.ss.Write(withCaller(ctx), data)
	if err != nil {
		return uint32(n), h.x.Host.Fail("write", h.path, err)
	}
	return uint32(n), 0
}

// Read returns the next unread answer bytes, at any offset.
func (h *sessionHandle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	n, err := h.ss.Read(withCaller(ctx), dest)
	if err != nil {
		return nil, h.x.Host.Fail("read", h.path, err)
	}
	return fuse.ReadResultData(dest[:n]), 0
}

// Flush has nothing to do (see package fs's readHandle.Flush for why it exists).
func (h *sessionHandle) Flush(ctx context.Context) syscall.Errno { return 0 }

// Fsync has nothing to do: every request is answered when written.
func (h *sessionHandle) Fsync(ctx context.Context, flags uint32) syscall.Errno { return 0 }

// Release ends the session and gives back the open files it held.
func (h *sessionHandle) Release(ctx context.Context) syscall.Errno {
	h.ss.Close()
	h.x.Open.Free(h.uid, h.held)
	return 0
}

// withCaller passes the kernel's sender of a read or write on to the
// control package, which checks it against the session's opener.
func withCaller(ctx context.Context) context.Context {
	if c, ok := fuse.FromContext(ctx); ok {
		return line.WithCaller(ctx, line.Caller{Uid: c.Uid, Gid: c.Gid, Pid: c.Pid})
	}
	return ctx
}
