package filesdir

import (
	"context"
	"sync/atomic"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/ucmfs/ucmfs/fs/ino"
	"github.com/ucmfs/ucmfs/vfs"
)

// The directories of a files model (store/files_dirs.go, layout/files): any tree of
// names. The model's root is package fs's modelNode, every directory below it a
// Dir; both answer through Ops. A published file is package fs's node
// (a File here) of a File key, numbered by its generation (a replaced File
// is a new node); a file being written is a pending.Node, seen by its
// writer (a staging name: by the writer's user).

// Dir is a directory of a files model below the model's root.
type Dir struct {
	gofs.Inode
	Common
	x          *Dirs
	model, dir string // dir: the path it was looked up by
	ino        uint64
	// moved is where it is since a rename moved it or a directory above
	// it (move_dir.go), nil before: the kernel keeps the node, and
	// its number, under the new name.
	moved atomic.Pointer[movedDir]
}

// movedDir is where a moved directory is: its model and path.
type movedDir struct{ model, dir string }

// where is the directory's model and path in it now.
func (d *Dir) where() (model, dir string) {
	if p := d.moved.Load(); p != nil {
		return p.model, p.dir
	}
	return d.model, d.dir
}

var (
	_ = (gofs.NodeLookuper)((*Dir)(nil))
	_ = (gofs.NodeOpendirHandler)((*Dir)(nil))
	_ = (gofs.NodeGetattrer)((*Dir)(nil))
	_ = (gofs.NodeMkdirer)((*Dir)(nil))
	_ = (gofs.NodeRmdirer)((*Dir)(nil))
	_ = (gofs.NodeCreater)((*Dir)(nil))
	_ = (gofs.NodeUnlinker)((*Dir)(nil))
	_ = (gofs.NodeRenamer)((*Dir)(nil))
	_ = (gofs.NodeOnForgetter)((*Dir)(nil))
	_ = (gofs.NodeFsyncer)((*Dir)(nil))
)

func (d *Dir) ops() Ops {
	d.x.Moves.Wait(d.where()) // then it may be elsewhere
	model, dir := d.where()
	return Ops{x: d.x, node: &d.Inode, model: model, dir: dir}
}

// OnForget frees the node's number and forgets its cached listing (the
// kernel keeps none of a node it forgot).
func (d *Dir) OnForget() {
	model, dir := d.where()
	d.x.Inos.Release(ino.DirName(model, dir), d.ino)
	d.x.Listings.Forget(vfs.FilesListingKey(model, dir), &d.Inode)
}

// Getattr describes the directory with its model's owner and mode, and
// the time of the last change of what it holds as its mtime.
func (d *Dir) Getattr(ctx context.Context, f gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	model, dir := d.where()
	d.x.Host.DirAttr(&out.Attr, model, dir)
	out.SetTimeout(d.x.EntryTTL)
	return 0
}

// Lookup finds a name in the directory (Ops.Lookup), asked again when a
// directory move began or ended meanwhile (vfs.DirMoves.Settled).
func (d *Dir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	var ch *gofs.Inode
	var errno syscall.Errno
	cached := d.x.Moves.Settled(func() {
		*out = fuse.EntryOut{}
		ch, errno = d.ops().Lookup(ctx, name, out)
	})
	if !cached {
		out.SetEntryTimeout(time.Nanosecond) // keeps go-fuse from caching a miss
		out.SetAttrTimeout(0)
	}
	return ch, errno
}

// OpendirHandle opens the directory (Ops.Opendir).
func (d *Dir) OpendirHandle(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	return d.ops().Opendir(ctx)
}

// Mkdir makes a directory (Ops.Mkdir).
func (d *Dir) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	return d.ops().Mkdir(ctx, name, out)
}

// Rmdir removes an empty directory (Ops.Rmdir).
func (d *Dir) Rmdir(ctx context.Context, name string) syscall.Errno {
	return d.ops().Rmdir(name)
}

// Create starts writing a file (Ops.Create).
func (d *Dir) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*gofs.Inode, gofs.FileHandle, uint32, syscall.Errno) {
	return d.ops().Create(ctx, name, flags, out)
}

// Unlink removes a file (Ops.Unlink).
func (d *Dir) Unlink(ctx context.Context, name string) syscall.Errno {
	return d.ops().Unlink(ctx, name)
}

// Rename publishes, moves a file or moves a directory (Ops.Rename).
func (d *Dir) Rename(ctx context.Context, name string, newParent gofs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	return d.ops().Rename(ctx, name, newParent, newName, flags)
}

// Fsync makes the directory's files durable (Host.SyncDir).
func (d *Dir) Fsync(ctx context.Context, f gofs.FileHandle, flags uint32) syscall.Errno {
	return d.ops().Fsync(ctx)
}
