package pending

import (
	"context"
	"errors"
	"fmt"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/ucmfs/ucmfs/store"
	"github.com/ucmfs/ucmfs/vfs"
)

// Node is a file being written, as its writers see it. It has a number
// of its own (tag 5: vfs.PendingIno), so no two files being written
// share a node or a kernel backing file.
type Node struct {
	gofs.Inode
	Common
	x *Files
	w *store.Draft
}

var (
	_ = (gofs.NodeGetattrer)((*Node)(nil))
	_ = (gofs.NodeSetattrer)((*Node)(nil))
	_ = (gofs.NodeOpener)((*Node)(nil))
	_ = (gofs.NodeGetxattrer)((*Node)(nil))
)

// NewNode is the node of w.
func (x *Files) NewNode(w *store.Draft) *Node {
	return &Node{Common: x.Host.Node(), x: x, w: w}
}

// Draft is the file the node was made for.
func (p *Node) Draft() *store.Draft { return p.w }

// draftOf is the file a request on the node is about: the one the
// descriptor f writes (an open of the node may have started the next
// version of a File, Open below); else, once the node's file is done, the
// caller's next version of it, if it writes one; else the node's.
func (p *Node) draftOf(ctx context.Context, f gofs.FileHandle) *store.Draft {
	if h, ok := f.(*Handle); ok {
		return h.d.Draft()
	}
	return vfs.DraftOf(p.x.Store, p.w, p.x.Host.Caller(ctx).Tgid)
}

// Getattr describes the file as written so far (never cached).
func (p *Node) Getattr(ctx context.Context, f gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	p.x.Host.WriteAttr(p.draftOf(ctx, f), &out.Attr)
	return 0
}

// Setattr applies to the file being written (see Host.SetWriting). By
// path (a truncate) of one that published or was discarded meanwhile
// (its writer's close, or its last release), it is ESTALE: the name's
// file is the published one now, and the kernel looks the name up again
// and sends the truncate there (truncate(2) retries on ESTALE), where it
// answered 0 and the truncate was lost.
func (p *Node) Setattr(ctx context.Context, f gofs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	w := p.draftOf(ctx, f)
	errno, published := p.x.Host.SetWriting(w, in, out)
	switch {
	case published && f == nil:
		return p.x.Errnos.Stale
	case published:
		return p.x.Host.Fail("setattr", w.Key().Path(), vfs.ErrPublished)
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
func (p *Node) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	key := p.w.Key()
	c := p.x.Host.Caller(ctx)
	d, reopened, err := vfs.OpenDraft(p.x.Store, p.w, c, flags&syscall.O_TRUNC != 0, flags&syscall.O_ACCMODE != syscall.O_RDONLY)
	switch {
	case reopened && err != nil:
		return nil, 0, p.x.Host.Fail("open", key.Path(), err)
	case errors.Is(err, store.ErrDone):
		p.x.Log.Debug("open of a file published meanwhile: the kernel looks it up again", "path", key.Path(), "errno", "ESTALE")
		return nil, 0, p.x.Errnos.Stale
	case err != nil:
		return nil, 0, p.x.Host.Fail("open", key.Path(), fmt.Errorf("%w (%w)", err, vfs.ErrReadOnly))
	}
	h := p.x.NewHandle(d, key, c.Uid, flags)
	if !reopened {
		p.x.Reopens.Take(c.Tgid, key) // a new version's retried open (vfs/reopen.go)
	}
	return h, h.OpenFlags(), 0
}
