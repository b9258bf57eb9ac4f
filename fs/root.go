package fs

import (
	"context"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/ucmfs/ucmfs/control"
	"github.com/ucmfs/ucmfs/fs/ino"
	"github.com/ucmfs/ucmfs/fs/ucmdir"
	"github.com/ucmfs/ucmfs/store"
	"github.com/ucmfs/ucmfs/vfs"
)

// rootNode is the mount's root: one directory per model, and .ucm/.
type rootNode struct {
	gofs.Inode
	dirCommon
}

var (
	_ = (gofs.NodeOnAdder)((*rootNode)(nil))
	_ = (gofs.NodeLookuper)((*rootNode)(nil))
	_ = (gofs.NodeReaddirer)((*rootNode)(nil))
	_ = (gofs.NodeGetattrer)((*rootNode)(nil))
	_ = (gofs.NodeMkdirer)((*rootNode)(nil))
	_ = (gofs.NodeRmdirer)((*rootNode)(nil))
	_ = (gofs.NodeStatfser)((*rootNode)(nil))
	_ = (gofs.NodeCreater)((*rootNode)(nil))
	_ = (gofs.NodeUnlinker)((*rootNode)(nil))
	_ = (gofs.NodeRenamer)((*rootNode)(nil))
	_ = (gofs.NodeLinker)((*rootNode)(nil))
	_ = (gofs.NodeSymlinker)((*rootNode)(nil))
	_ = (gofs.NodeMknoder)((*rootNode)(nil))
	_ = (gofs.NodeSetattrer)((*rootNode)(nil))
)

func newRoot(s *fsState) *rootNode {
	return &rootNode{dirCommon: dirCommon{common: common{s: s}, what: "/"}}
}

// OnAdd builds the static .ucm subtree.
func (r *rootNode) OnAdd(ctx context.Context) {
	ucm := ucmdir.New(ucmdir.Config{Host: ucmHost{r.s}, Env: r.s.env, Store: r.s.store, Access: r.s.control,
		Open: &r.s.reading, Log: r.s.log, EntryTTL: r.s.opts.EntryTTL, Mounted: r.s.mounted})
	ch := r.NewPersistentInode(ctx, ucm, gofs.StableAttr{Mode: syscall.S_IFDIR, Ino: control.DirIno})
	r.AddChild(ucmName, ch, false)
}

// Getattr describes the root directory.
func (r *rootNode) Getattr(ctx context.Context, f gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	r.s.rootAttr(&out.Attr)
	out.SetTimeout(r.s.opts.EntryTTL)
	return 0
}

// Lookup finds .ucm or a model directory.
func (r *rootNode) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	if name == ucmName {
		ch := r.GetChild(ucmName)
		r.s.dirAttr(&out.Attr, 2)
		ttl(out, r.s.opts.EntryTTL)
		return ch, 0
	}
	if err := vfs.FindModel(r.s.store, name); err != nil {
		return nil, r.s.refuse("lookup", name, err)
	}
	return r.modelInode(ctx, name, out), 0
}

// modelInode returns the node of model directory name and fills out.
func (r *rootNode) modelInode(ctx context.Context, name string, out *fuse.EntryOut) *gofs.Inode {
	id := ino.ModelName(name)
	ino := r.s.inos.Acquire(id)
	ch := newChild(ctx, &r.Inode, name, ino, syscall.S_IFDIR, func() gofs.InodeEmbedder {
		return newModelNode(r.s, name, ino)
	})
	ch.Operations().(*modelNode).layout().attr(&out.Attr)
	ttl(out, r.s.opts.EntryTTL)
	return ch
}

// Readdir lists the dots, .ucm and every model.
func (r *rootNode) Readdir(ctx context.Context) (gofs.DirStream, syscall.Errno) {
	r.s.store.Models().Refresh()
	names := r.s.store.Models().Names()
	ents := make([]fuse.DirEntry, 0, len(names)+3)
	ents = append(ents, dots(rootIno, rootIno)...)
	ents = append(ents, fuse.DirEntry{Name: ucmName, Mode: syscall.S_IFDIR, Ino: control.DirIno})
	for _, n := range names {
		ents = append(ents, fuse.DirEntry{Name: n, Mode: syscall.S_IFDIR, Ino: r.s.inos.Peek(ino.ModelName(n))})
	}
	return gofs.NewListDirStream(ents), 0
}

// Mkdir creates a model directory (vfs.MakeModel).
func (r *rootNode) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	if name == ucmName {
		return nil, errnoExists
	}
	c := callerProc(ctx)
	if err := vfs.MakeModel(r.s.store, name, c.Uid, c.Gid, mode); err != nil {
		return nil, r.s.refuse("mkdir", name, err)
	}
	return r.modelInode(ctx, name, out), 0
}

// Rmdir drops a model once it holds no file (vfs.RemoveModel); .ucm
// stays.
func (r *rootNode) Rmdir(ctx context.Context, name string) syscall.Errno {
	if name == ucmName {
		return r.s.fail("rmdir", name, store.ErrImmutable)
	}
	return r.s.refuse("rmdir", name, vfs.RemoveModel(r.s.store, name, callerUid(ctx)))
}

// ucmName is the control directory's name in the root.
const ucmName = control.Dir

// ucmHost is the adapter as the control directory sees it (ucmdir.Host).
type ucmHost struct{ s *fsState }

func (h ucmHost) Fail(op, path string, err error) syscall.Errno { return h.s.fail(op, path, err) }
func (h ucmHost) Errno(err error) syscall.Errno                 { return toErrno(err) }
func (h ucmHost) Uid(ctx context.Context) uint32                { return callerUid(ctx) }
func (h ucmHost) DirAttr(a *fuse.Attr, nlink uint32)            { h.s.dirAttr(a, nlink) }
func (h ucmHost) Node() ucmdir.Common                           { return common{s: h.s} }
func (h ucmHost) Dir(what string) ucmdir.DirNode {
	return dirCommon{common: common{s: h.s}, what: what}
}
func (h ucmHost) FileAttr(a *fuse.Attr, size int64, mtime time.Time, perm uint32) {
	h.s.fileAttr(a, size, mtime, perm)
}
