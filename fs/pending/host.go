package pending

import (
	"context"
	"log/slog"
	"sync/atomic"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/store"
	"github.com/ucmfs/ucmfs/vfs"
)

// Common is what every file of the mount answers alike (package fs's
// common: statfs, no extended attributes). A Node embeds it, so go-fuse
// finds its methods on it; the requests common answers for a directory
// (rename, link, symlink, mknod) never reach a file's node.
type Common interface {
	gofs.NodeStatfser
	gofs.NodeGetxattrer
	gofs.NodeSetxattrer
	gofs.NodeRemovexattrer
	gofs.NodeListxattrer
}

// Host is the adapter as the files being written see it.
type Host interface {
	// Fail turns err into an errno and logs the refused request.
	Fail(op, path string, err error) syscall.Errno
	// Errno turns err into an errno, logging nothing.
	Errno(err error) syscall.Errno
	// Caller is the process that sent the request.
	Caller(ctx context.Context) store.Proc
	// WriteAttr fills the attributes of w as its writers see it.
	WriteAttr(w *store.Draft, a *fuse.Attr)
	// SetWriting applies a setattr to w; when w was published before
	// the change took it changes nothing and reports published.
	SetWriting(w *store.Draft, in *fuse.SetAttrIn, out *fuse.AttrOut) (errno syscall.Errno, published bool)
	// Replaced drops the kernel's entry of k's name once a close or an
	// fsync by a process of uid published k over an earlier version
	// (waiting for it a while); ReplacedLater drops it in the
	// background, for a release.
	Replaced(uid uint32, k format.Key)
	ReplacedLater(k format.Key)
	// WritePassthrough reports whether the kernel writes the files uid
	// opens itself (passthrough).
	WritePassthrough(uid uint32) bool
	// Flock answers a lock request on an open file of key.
	Flock(ctx context.Context, key format.Key, owner uint64, lk *fuse.FileLock, flags uint32, wait bool) syscall.Errno
	// Node is what every file answers alike.
	Node() Common
}

// Errnos are the plain answers of the files being written, which
// package fs decides (fs/errno.go).
type Errnos struct {
	// Stale: a node that no longer stands for its name (a file
	// published between the lookup that found it being written and
	// the open): the kernel looks the name up again and opens once more.
	Stale syscall.Errno
	// BadFD: a descriptor that cannot do what is asked.
	BadFD syscall.Errno
}

// Files is what the nodes and handles of one mount's files being
// written share.
type Files struct {
	Host    Host
	Errnos  Errnos
	Store   *store.Store
	Reopens *vfs.Reopens // new versions of Files waiting for their open's retry
	Log     *slog.Logger
	Writes  *atomic.Int64 // write requests the daemon served (none with passthrough)
}
