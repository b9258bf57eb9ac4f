package filesdir

import (
	"context"
	"log/slog"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/fs/ino"
	"github.com/ucmfs/ucmfs/fs/pending"
	"github.com/ucmfs/ucmfs/store"
	"github.com/ucmfs/ucmfs/vfs"
)

// Common is what a directory of a files model answers as every
// directory of the mount does (package fs's dirCommon: statfs, a setattr
// that changes nothing, symlink and mknod refused, link of anything but
// a tmpfile refused). A Dir embeds it, so go-fuse finds its methods on
// it.
type Common interface {
	gofs.NodeStatfser
	gofs.NodeSetattrer
	gofs.NodeSymlinker
	gofs.NodeMknoder
	gofs.NodeLinker
}

// File is the node of a published File (package fs's), as the
// directories see it: a move takes its current version along, and a
// version a newer one replaced stays what it is.
type File interface {
	gofs.InodeEmbedder
	// Key is the key the node was looked up as.
	Key() format.Key
	// Served is the key the node serves now (vfs.FilesNodes.Serves).
	Served() format.Key
	// Superseded reports whether the node is a version of the File key
	// that a newer one replaced (vfs.FilesNodes.Superseded).
	Superseded(key format.Key) bool
	// Readers is the number of the node's open read descriptors and
	// mappings.
	Readers() int
}

// Host is the adapter as the directories of the files models see it.
type Host interface {
	// Fail turns err into an errno and logs the refused request.
	Fail(op, path string, err error) syscall.Errno
	// Refuse is Fail, but a plain refusal (vfs.IsPlain) is logged at
	// debug level; a nil err is 0.
	Refuse(op, path string, err error) syscall.Errno
	// Caller is the process that sent the request.
	Caller(ctx context.Context) store.Proc
	// Node is what a directory (what, for logs) answers as every
	// directory does.
	Node(what string) Common
	// Child is the node of name under parent: the one parent has when
	// its number is ino, else a new one made by mk.
	Child(ctx context.Context, parent *gofs.Inode, name string, ino uint64, mode uint32, mk func() gofs.InodeEmbedder) *gofs.Inode
	// NewFile is a new node of the published file key, numbered ino.
	NewFile(key format.Key, ino uint64) gofs.InodeEmbedder
	// RootOf reports whether n is the root of a files model, and which.
	RootOf(n gofs.InodeEmbedder) (model string, ok bool)
	// PublishedAttr fills the entry of a published file.
	PublishedAttr(key format.Key, bi store.BlockInfo, out *fuse.EntryOut)
	// MissEntry answers a lookup that missed (ENOENT, cached or not).
	MissEntry(f vfs.Found, out *fuse.EntryOut) syscall.Errno
	// DirAttr fills the attributes of directory dir of model.
	DirAttr(a *fuse.Attr, model, dir string)
	// Dots are the "." and ".." entries of directory dir of model.
	Dots(model, dir string) []fuse.DirEntry
	// WriteAttr fills the attributes of w as its writers see it.
	WriteAttr(w *store.Draft, a *fuse.Attr)
	// BeginWrite opens a descriptor on the file name (key; a staging
	// name when staging is set) that p writes, starting it if there is
	// none.
	BeginWrite(p store.Proc, key format.Key, name string, staging bool, flags uint32) (*store.Draft, *pending.Handle, syscall.Errno)
	// SyncDir answers the fsync of the directory what of model, whose
	// published files keys lists.
	SyncDir(ctx context.Context, what, model string, keys func() []format.Key) syscall.Errno
	// NotifyGone drops the kernel's entry of name under parent.
	NotifyGone(parent *gofs.Inode, name string)
	// DropPublishedName drops it once the request that published a
	// file there is answered.
	DropPublishedName(parent *gofs.Inode, name string)
	// Getxattr, Setxattr, Removexattr and Listxattr answer the user.ucm.*
	// requests of path from the table x.
	Getxattr(x *store.Attrs, path, attr string, dest []byte) (uint32, syscall.Errno)
	Setxattr(x *store.Attrs, path, attr string, data []byte) syscall.Errno
	Removexattr(x *store.Attrs, path, attr string) syscall.Errno
	Listxattr(x *store.Attrs, dest []byte) (uint32, syscall.Errno)
}

// Errnos are the plain answers of the directories, which package fs
// decides (fs/errno.go).
type Errnos struct {
	Missing syscall.Errno // no such name
	Exists  syscall.Errno // the name exists
	NotDir  syscall.Errno // a file where a directory was asked for
	BadOff  syscall.Errno // a directory offset past its listing
}

// Dirs is what the directories of one mount's files models share.
type Dirs struct {
	Host     Host
	Errnos   Errnos
	Store    *store.Store
	Inos     *ino.Table     // the nodes' numbers, by name
	Pending  *pending.Files // the files being written
	EntryTTL time.Duration  // how long the kernel keeps an entry and its attributes
	Log      *slog.Logger
	// Files are the nodes of files models' Files that are not numbered
	// by FileName alone, and the Files moved under their nodes
	// (vfs/files_nodes.go).
	Files *vfs.FilesNodes[File]
	// Moves are the directory moves in flight (vfs/dir_moves.go).
	Moves *vfs.DirMoves
	// Listings are the directories whose listing the kernel may have
	// cached (vfs.CachedListings).
	Listings *vfs.CachedListings[*gofs.Inode]
	// Listed are the names the listings of open directories hold
	// (vfs/user_budget.go).
	Listed *vfs.UserBudget
}

// Root is the requests of the root of files model model, whose node is
// node.
func (x *Dirs) Root(node *gofs.Inode, model string) Ops {
	return Ops{x: x, node: node, model: model}
}

// ownWriting is vfs.OwnWriting for the caller of ctx.
func (x *Dirs) ownWriting(ctx context.Context, key format.Key, name string, drop bool) *store.Draft {
	p := x.Host.Caller(ctx)
	return vfs.OwnWriting(x.Store, key, name, p.Tgid, p.Uid, drop)
}

// ttl sets both timeouts of an entry.
func ttl(out *fuse.EntryOut, d time.Duration) {
	out.SetEntryTimeout(d)
	out.SetAttrTimeout(d)
}
