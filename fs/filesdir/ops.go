package filesdir

import (
	"context"
	"errors"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/fs/ino"
	"github.com/ucmfs/ucmfs/store"
	"github.com/ucmfs/ucmfs/vfs"
)

// Ops answers the requests of one directory of a files model.
type Ops struct {
	x     *Dirs
	node  *gofs.Inode
	model string
	dir   string // "" at the model's root
}

// path is name's path in the model; a bad name is an error wrapping
// format.ErrName.
func (o Ops) path(name string) (string, error) {
	if err := vfs.CheckFileName(o.dir, name); err != nil {
		return "", err
	}
	return format.JoinFilePath(o.dir, name), nil
}

// what names name for log lines.
func (o Ops) what(name string) string { return o.model + "/" + format.JoinFilePath(o.dir, name) }

// writing returns the file name is being written as, that the caller
// sees: a staging file of its user, or a file its process writes.
func (o Ops) writing(ctx context.Context, key format.Key, name string) *store.Draft {
	return o.x.ownWriting(ctx, key, name, false)
}

// Lookup finds, in order, a file the caller is writing, a published
// file, a directory (a bad name: vfs.LookupName).
func (o Ops) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	rel, err := vfs.LookupName(o.dir, name)
	if err != nil {
		return nil, o.x.Host.Refuse("lookup", o.what(name), err)
	}
	return o.lookupKey(ctx, name, rel, format.FileKey(o.model, rel), out)
}

// lookupKey is lookup of name, at path rel in the model, whose File key
// is key.
func (o Ops) lookupKey(ctx context.Context, name, rel string, key format.Key, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	if w := o.writing(ctx, key, name); w != nil {
		return o.pendingInode(ctx, w, out), 0
	}
	f := vfs.LookupKey(o.x.Store, key)
	if f.Err == nil {
		return o.fileInode(ctx, key, f.Info, out), 0
	}
	if !f.Missing() {
		return nil, o.x.Host.Fail("lookup", key.Path(), f.Err)
	}
	if o.x.Store.FilesDir(o.model, rel) {
		return o.dirInode(ctx, name, rel, out), 0
	}
	return nil, o.x.Host.MissEntry(f, out)
}

// fileInode returns the node of the published File key (of its current
// generation) and fills out.
func (o Ops) fileInode(ctx context.Context, key format.Key, bi store.BlockInfo, out *fuse.EntryOut) *gofs.Inode {
	name := ino.FileVersion(key, o.x.Store.Writes().Gen(key))
	n := o.x.Inos.Acquire(name)
	if name.Gen != 0 {
		o.x.Files.Named(n, name)
	}
	ch := o.x.Host.Child(ctx, o.node, key.FileName(), n, syscall.S_IFREG, func() gofs.InodeEmbedder {
		return o.x.Host.NewFile(key, n)
	})
	o.x.Host.PublishedAttr(key, bi, out)
	return ch
}

// dirInode returns the node of the directory rel and fills out.
func (o Ops) dirInode(ctx context.Context, name, rel string, out *fuse.EntryOut) *gofs.Inode {
	ch := o.movedHere(name, rel)
	if ch != nil {
		o.x.Host.DirAttr(&out.Attr, o.model, rel)
		ttl(out, o.x.EntryTTL)
		return ch
	}
	n := o.x.Inos.Acquire(ino.DirName(o.model, rel))
	ch = o.x.Host.Child(ctx, o.node, name, n, syscall.S_IFDIR, func() gofs.InodeEmbedder {
		return &Dir{Common: o.x.Host.Node(o.model + "/" + rel), x: o.x,
			model: o.model, dir: rel, ino: n}
	})
	o.x.Host.DirAttr(&out.Attr, o.model, rel)
	ttl(out, o.x.EntryTTL)
	return ch
}

// pendingInode returns the node of a file being written; the kernel
// caches nothing of it.
func (o Ops) pendingInode(ctx context.Context, w *store.Draft, out *fuse.EntryOut) *gofs.Inode {
	ch := o.x.Host.Child(ctx, o.node, w.Name(), vfs.PendingIno(w), syscall.S_IFREG, func() gofs.InodeEmbedder {
		return o.x.Pending.NewNode(w)
	})
	o.x.Host.WriteAttr(w, &out.Attr)
	ttl(out, 0)
	return ch
}

// Fsync makes the files the directory lists durable (Host.SyncDir):
// those in memory only are all it has to look at.
func (o Ops) Fsync(ctx context.Context) syscall.Errno {
	return o.x.Host.SyncDir(ctx, o.model+"/"+o.dir, o.model, func() []format.Key { return o.x.Store.DirtyFilesIn(o.model, o.dir) })
}

// Mkdir makes a directory (store.FilesMkdir).
func (o Ops) Mkdir(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	rel, err := o.path(name)
	if err == nil {
		err = o.x.Store.FilesMkdir(o.model, rel, o.x.Host.Caller(ctx).Uid)
	}
	if errors.Is(err, store.ErrExist) {
		return nil, o.x.Errnos.Exists
	}
	if err != nil {
		return nil, o.x.Host.Fail("mkdir", o.what(name), err)
	}
	return o.dirInode(ctx, name, rel, out), 0
}

// Rmdir removes an empty directory (vfs.FilesRmdir).
func (o Ops) Rmdir(name string) syscall.Errno {
	rel, err := o.path(name)
	if err != nil {
		return o.x.Errnos.Missing
	}
	return o.x.Host.Refuse("rmdir", o.what(name), vfs.FilesRmdir(o.x.Store, o.model, rel))
}

// Create starts writing a file (vfs.FilesCreate): a staging file,
// published at its rename, or a file published at its writer's last
// close, replacing a published one (O_EXCL: EEXIST).
func (o Ops) Create(ctx context.Context, name string, flags uint32, out *fuse.EntryOut) (*gofs.Inode, gofs.FileHandle, uint32, syscall.Errno) {
	key, staging, err := vfs.FilesCreate(o.x.Store, o.model, o.dir, name)
	if err != nil {
		return nil, nil, 0, o.x.Host.Fail("create", o.what(name), err)
	}
	w, h, errno := o.x.Host.BeginWrite(o.x.Host.Caller(ctx), key, name, staging, flags)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	return o.pendingInode(ctx, w, out), h, h.OpenFlags(), 0
}

// Unlink removes a file being written (dropped) or a published one
// (vfs.UnlinkFile).
func (o Ops) Unlink(ctx context.Context, name string) syscall.Errno {
	rel, err := o.path(name)
	if err != nil {
		return o.x.Errnos.Missing
	}
	key := format.FileKey(o.model, rel)
	w := o.x.ownWriting(ctx, key, name, true)
	err = vfs.UnlinkFile(o.x.Store, key, w, func() bool { return o.openVersion(name) || o.x.Files.MovedTo(key) })
	return o.x.Host.Refuse("unlink", key.Path(), err)
}

// openVersion reports whether the node the kernel has under name, a
// published File, is open (read descriptors or a mapping): once the file
// is removed, one published under the name again is a new version, with
// a node of its own.
func (o Ops) openVersion(name string) bool {
	ch := o.node.GetChild(name)
	if ch == nil {
		return false
	}
	n, ok := ch.Operations().(File)
	return ok && n.Readers() > 0
}
