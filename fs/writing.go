package fs

import (
	"context"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/fs/pending"
	"github.com/ucmfs/ucmfs/store"
	"github.com/ucmfs/ucmfs/vfs"
)

// Files being written: their nodes and descriptors are package
// fs/pending's, with the adapter as its Host (pendingHost); a create
// starts one here, and a published file's node shows and changes the
// file being written that an open of its name started.

// beginWrite opens a descriptor on the file name (key; a staging name
// when staging is set) that p writes, starting it if there is none
// (vfs.BeginWrite).
func (s *fsState) beginWrite(p store.Proc, key format.Key, name string, staging bool, flags uint32) (*store.Draft, *pending.Handle, syscall.Errno) {
	m := store.OpenMode{Staging: staging, Excl: flags&syscall.O_EXCL != 0, Trunc: flags&syscall.O_TRUNC != 0, Direct: flags&syscall.O_DIRECT != 0}
	w, d, err := vfs.BeginWrite(s.store, p, key, name, m)
	if err != nil {
		return nil, nil, s.refuse("create", key.Path(), err)
	}
	return w, s.pending.NewHandle(d, key, p.Uid, flags), 0
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

// pendingHost is the adapter as the files being written see it
// (pending.Host).
type pendingHost struct{ s *fsState }

func (h pendingHost) Fail(op, path string, err error) syscall.Errno { return h.s.fail(op, path, err) }
func (h pendingHost) Errno(err error) syscall.Errno                 { return toErrno(err) }
func (h pendingHost) Caller(ctx context.Context) store.Proc         { return callerProc(ctx) }
func (h pendingHost) WriteAttr(w *store.Draft, a *fuse.Attr)        { h.s.writeAttr(w, a) }
func (h pendingHost) Replaced(uid uint32, k format.Key)             { h.s.notifyReplacedBy(uid, k) }
func (h pendingHost) ReplacedLater(k format.Key)                    { h.s.notifyReplaced(k) }
func (h pendingHost) Node() pending.Common                          { return common{s: h.s} }
func (h pendingHost) SetWriting(w *store.Draft, in *fuse.SetAttrIn, out *fuse.AttrOut) (syscall.Errno, bool) {
	return h.s.setWriting(w, in, out)
}
func (h pendingHost) WritePassthrough(uid uint32) bool {
	return h.s.backing.Active() && h.s.opts.WritePassthrough(uid, h.s.uid)
}
func (h pendingHost) Flock(ctx context.Context, key format.Key, owner uint64, lk *fuse.FileLock, flags uint32, wait bool) syscall.Errno {
	return h.s.flock(ctx, key, owner, lk, flags, wait)
}
