package fs

import (
	"context"
	"errors"
	"sync/atomic"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/fs/ino"
	"github.com/ucmfs/ucmfs/store"
	"github.com/ucmfs/ucmfs/vfs"
)

// The directories of a files model (store/files_dirs.go, layout/files): any tree of
// names. The model's root is its modelNode, every directory below it a
// filesDir; both answer through filesOps. A published file is a
// storedFile of a File key, numbered by its generation (a replaced File
// is a new node); a file being written is a pending.Node, seen by its
// writer (a staging name: by the writer's user).

// filesDir is a directory of a files model below the model's root.
type filesDir struct {
	gofs.Inode
	dirCommon
	model, dir string // dir: the path it was looked up by
	ino        uint64
	// moved is where it is since a rename moved it or a directory above
	// it (files_move_dir.go), nil before: the kernel keeps the node, and
	// its number, under the new name.
	moved atomic.Pointer[movedDir]
}

// movedDir is where a moved directory is: its model and path.
type movedDir struct{ model, dir string }

// where is the directory's model and path in it now.
func (d *filesDir) where() (model, dir string) {
	if p := d.moved.Load(); p != nil {
		return p.model, p.dir
	}
	return d.model, d.dir
}

var (
	_ = (gofs.NodeLookuper)((*filesDir)(nil))
	_ = (gofs.NodeOpendirHandler)((*filesDir)(nil))
	_ = (gofs.NodeGetattrer)((*filesDir)(nil))
	_ = (gofs.NodeMkdirer)((*filesDir)(nil))
	_ = (gofs.NodeRmdirer)((*filesDir)(nil))
	_ = (gofs.NodeCreater)((*filesDir)(nil))
	_ = (gofs.NodeUnlinker)((*filesDir)(nil))
	_ = (gofs.NodeRenamer)((*filesDir)(nil))
	_ = (gofs.NodeOnForgetter)((*filesDir)(nil))
	_ = (gofs.NodeFsyncer)((*filesDir)(nil))
)

func (d *filesDir) ops() filesOps {
	d.s.dirMoves.Wait(d.where()) // then it may be elsewhere
	model, dir := d.where()
	return filesOps{s: d.s, node: &d.Inode, model: model, dir: dir}
}

// OnForget frees the node's number and forgets its cached listing (the
// kernel keeps none of a node it forgot).
func (d *filesDir) OnForget() {
	model, dir := d.where()
	d.s.inos.Release(ino.DirName(model, dir), d.ino)
	d.s.listings.Forget(vfs.FilesListingKey(model, dir), &d.Inode)
}

// Getattr describes the directory with its model's owner and mode, and
// the time of the last change of what it holds as its mtime.
func (d *filesDir) Getattr(ctx context.Context, f gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	model, dir := d.where()
	d.s.filesDirAttr(&out.Attr, model, dir)
	out.SetTimeout(d.s.opts.EntryTTL)
	return 0
}

// Lookup, OpendirHandle, Mkdir, Rmdir, Create, Unlink and Rename: see
// filesOps.
func (d *filesDir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	var ch *gofs.Inode
	var errno syscall.Errno
	cached := d.s.dirMoves.Settled(func() {
		*out = fuse.EntryOut{}
		ch, errno = d.ops().lookup(ctx, name, out)
	})
	if !cached {
		out.SetEntryTimeout(time.Nanosecond) // keeps go-fuse from caching a miss
		out.SetAttrTimeout(0)
	}
	return ch, errno
}
func (d *filesDir) OpendirHandle(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	return d.ops().opendir(ctx)
}
func (d *filesDir) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	return d.ops().mkdir(ctx, name, out)
}
func (d *filesDir) Rmdir(ctx context.Context, name string) syscall.Errno {
	return d.ops().rmdir(name)
}
func (d *filesDir) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*gofs.Inode, gofs.FileHandle, uint32, syscall.Errno) {
	return d.ops().create(ctx, name, flags, out)
}
func (d *filesDir) Unlink(ctx context.Context, name string) syscall.Errno {
	return d.ops().unlink(ctx, name)
}
func (d *filesDir) Rename(ctx context.Context, name string, newParent gofs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	return d.ops().rename(ctx, name, newParent, newName, flags)
}

// Fsync makes the directory's files durable (fsState.syncDir).
func (d *filesDir) Fsync(ctx context.Context, f gofs.FileHandle, flags uint32) syscall.Errno {
	return d.ops().fsync(ctx)
}

// filesOps answers the requests of one directory of a files model.
type filesOps struct {
	s     *fsState
	node  *gofs.Inode
	model string
	dir   string // "" at the model's root
}

// path is name's path in the model; a bad name is an error wrapping
// format.ErrName.
func (o filesOps) path(name string) (string, error) {
	if err := vfs.CheckFileName(o.dir, name); err != nil {
		return "", err
	}
	return format.JoinFilePath(o.dir, name), nil
}

// what names name for log lines.
func (o filesOps) what(name string) string { return o.model + "/" + format.JoinFilePath(o.dir, name) }

// writing returns the file name is being written as, that the caller
// sees: a staging file of its user, or a file its process writes.
func (o filesOps) writing(ctx context.Context, key format.Key, name string) *store.Draft {
	return o.s.ownWriting(ctx, key, name, false)
}

// ownWriting is vfs.OwnWriting for the caller of ctx.
func (s *fsState) ownWriting(ctx context.Context, key format.Key, name string, drop bool) *store.Draft {
	p := callerProc(ctx)
	return vfs.OwnWriting(s.store, key, name, p.Tgid, p.Uid, drop)
}

// lookup finds, in order, a file the caller is writing, a published
// file, a directory (a bad name: vfs.LookupName).
func (o filesOps) lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	rel, err := vfs.LookupName(o.dir, name)
	if err != nil {
		return nil, o.s.refuse("lookup", o.what(name), err)
	}
	return o.lookupKey(ctx, name, rel, format.FileKey(o.model, rel), out)
}

// lookupKey is lookup of name, at path rel in the model, whose File key
// is key.
func (o filesOps) lookupKey(ctx context.Context, name, rel string, key format.Key, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	if w := o.writing(ctx, key, name); w != nil {
		return o.pendingInode(ctx, w, out), 0
	}
	f := vfs.LookupKey(o.s.store, key)
	if f.Err == nil {
		return o.fileInode(ctx, key, f.Info, out), 0
	}
	if !f.Missing() {
		return nil, o.s.fail("lookup", key.Path(), f.Err)
	}
	if o.s.store.FilesDir(o.model, rel) {
		return o.dirInode(ctx, name, rel, out), 0
	}
	return nil, o.s.missEntry(f, out)
}

// fileInode returns the node of the published File key (of its current
// generation) and fills out.
func (o filesOps) fileInode(ctx context.Context, key format.Key, bi store.BlockInfo, out *fuse.EntryOut) *gofs.Inode {
	name := ino.FileVersion(key, o.s.store.Writes().Gen(key))
	n := o.s.inos.Acquire(name)
	if name.Gen != 0 {
		o.s.files.Named(n, name)
	}
	ch := newChild(ctx, o.node, key.FileName(), n, syscall.S_IFREG, func() gofs.InodeEmbedder {
		return newStoredNode(o.s, key, n)
	})
	o.s.publishedAttr(key, bi, out)
	return ch
}

// dirInode returns the node of the directory rel and fills out.
func (o filesOps) dirInode(ctx context.Context, name, rel string, out *fuse.EntryOut) *gofs.Inode {
	ch := o.movedHere(name, rel)
	if ch != nil {
		o.s.filesDirAttr(&out.Attr, o.model, rel)
		ttl(out, o.s.opts.EntryTTL)
		return ch
	}
	n := o.s.inos.Acquire(ino.DirName(o.model, rel))
	ch = newChild(ctx, o.node, name, n, syscall.S_IFDIR, func() gofs.InodeEmbedder {
		return &filesDir{dirCommon: dirCommon{common: common{s: o.s}, what: o.model + "/" + rel},
			model: o.model, dir: rel, ino: n}
	})
	o.s.filesDirAttr(&out.Attr, o.model, rel)
	ttl(out, o.s.opts.EntryTTL)
	return ch
}

// pendingInode returns the node of a file being written; the kernel
// caches nothing of it.
func (o filesOps) pendingInode(ctx context.Context, w *store.Draft, out *fuse.EntryOut) *gofs.Inode {
	ch := newChild(ctx, o.node, w.Name(), vfs.PendingIno(w), syscall.S_IFREG, func() gofs.InodeEmbedder {
		return o.s.pending.NewNode(w)
	})
	o.s.writeAttr(w, &out.Attr)
	ttl(out, 0)
	return ch
}

// fsync makes the files the directory lists durable (fsState.syncDir):
// those in memory only are all it has to look at.
func (o filesOps) fsync(ctx context.Context) syscall.Errno {
	return o.s.syncDir(ctx, o.model+"/"+o.dir, o.model, func() []format.Key { return o.s.store.DirtyFilesIn(o.model, o.dir) })
}

// mkdir makes a directory (store.FilesMkdir).
func (o filesOps) mkdir(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	rel, err := o.path(name)
	if err == nil {
		err = o.s.store.FilesMkdir(o.model, rel, callerProc(ctx).Uid)
	}
	if errors.Is(err, store.ErrExist) {
		return nil, errnoExists
	}
	if err != nil {
		return nil, o.s.fail("mkdir", o.what(name), err)
	}
	return o.dirInode(ctx, name, rel, out), 0
}

// rmdir removes an empty directory (vfs.FilesRmdir).
func (o filesOps) rmdir(name string) syscall.Errno {
	rel, err := o.path(name)
	if err != nil {
		return errnoMissing
	}
	return o.s.refuse("rmdir", o.what(name), vfs.FilesRmdir(o.s.store, o.model, rel))
}

// create starts writing a file (vfs.FilesCreate): a staging file,
// published at its rename, or a file published at its writer's last
// close, replacing a published one (O_EXCL: EEXIST).
func (o filesOps) create(ctx context.Context, name string, flags uint32, out *fuse.EntryOut) (*gofs.Inode, gofs.FileHandle, uint32, syscall.Errno) {
	key, staging, err := vfs.FilesCreate(o.s.store, o.model, o.dir, name)
	if err != nil {
		return nil, nil, 0, o.s.fail("create", o.what(name), err)
	}
	w, h, errno := o.s.beginWrite(callerProc(ctx), key, name, staging, flags)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	return o.pendingInode(ctx, w, out), h, h.OpenFlags(), 0
}

// unlink removes a file being written (dropped) or a published one
// (vfs.UnlinkFile).
func (o filesOps) unlink(ctx context.Context, name string) syscall.Errno {
	rel, err := o.path(name)
	if err != nil {
		return errnoMissing
	}
	key := format.FileKey(o.model, rel)
	w := o.s.ownWriting(ctx, key, name, true)
	err = vfs.UnlinkFile(o.s.store, key, w, func() bool { return o.openVersion(name) || o.s.files.MovedTo(key) })
	return o.s.refuse("unlink", key.Path(), err)
}

// openVersion reports whether the node the kernel has under name, a
// published File, is open (read descriptors or a mapping): once the file
// is removed, one published under the name again is a new version, with
// a node of its own.
func (o filesOps) openVersion(name string) bool {
	ch := o.node.GetChild(name)
	if ch == nil {
		return false
	}
	n, ok := ch.Operations().(*blockFile)
	return ok && n.open.Readers() > 0
}
