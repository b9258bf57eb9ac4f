package fs

import (
	"context"
	"sync/atomic"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/ucmfs/ucmfs/fs/ino"
	"github.com/ucmfs/ucmfs/layout"
	"github.com/ucmfs/ucmfs/vfs"
)

// modelNode is a model directory. What it shows and allows is its
// layout's (model_layouts.go): a ucmb model always shows the 256 shard
// directories 00..ff, a ucm-posix model the shards its store made
// (raw_shard.go) and its private entries (package fs/scratch), a files model
// the root of the engine's tree (package fs/filesdir). The node asks its layout once
// per request (layout) and never branches on it.
type modelNode struct {
	gofs.Inode
	dirCommon
	model string
	ino   uint64
	cur   atomic.Pointer[chosenLayout] // the layout type last chosen (layout)
}

var (
	_ = (gofs.NodeLookuper)((*modelNode)(nil))
	_ = (gofs.NodeOpendirHandler)((*modelNode)(nil))
	_ = (gofs.NodeGetattrer)((*modelNode)(nil))
	_ = (gofs.NodeMkdirer)((*modelNode)(nil))
	_ = (gofs.NodeRmdirer)((*modelNode)(nil))
	_ = (gofs.NodeStatfser)((*modelNode)(nil))
	_ = (gofs.NodeCreater)((*modelNode)(nil))
	_ = (gofs.NodeUnlinker)((*modelNode)(nil))
	_ = (gofs.NodeRenamer)((*modelNode)(nil))
	_ = (gofs.NodeGetxattrer)((*modelNode)(nil))
	_ = (gofs.NodeSetxattrer)((*modelNode)(nil))
	_ = (gofs.NodeListxattrer)((*modelNode)(nil))
	_ = (gofs.NodeOnForgetter)((*modelNode)(nil))
	_ = (gofs.NodeFsyncer)((*modelNode)(nil))
	_ = (gofs.NodeTmpfiler)((*modelNode)(nil))
	_ = (gofs.NodeLinker)((*modelNode)(nil))
)

func newModelNode(s *fsState, model string, ino uint64) *modelNode {
	m := &modelNode{dirCommon: dirCommon{common: common{s: s}, what: model}, model: model, ino: ino}
	m.layout()
	return m
}

// modelLayout is what a model directory does that its layout decides:
// one type per layout (ucmbModel, posixModel, filesModel).
type modelLayout interface {
	// attr fills the directory's attributes, as every request that
	// answers them does (a LOOKUP, a GETATTR, a SETATTR): the kernel
	// compares the mtime at each listing, and two answers of one
	// directory must not differ in it.
	attr(a *fuse.Attr)
	lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno)
	opendir(ctx context.Context) (gofs.FileHandle, uint32, syscall.Errno)
	mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno)
	rmdir(ctx context.Context, name string) syscall.Errno
	create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*gofs.Inode, gofs.FileHandle, uint32, syscall.Errno)
	unlink(ctx context.Context, name string) syscall.Errno
	rename(ctx context.Context, name string, newParent gofs.InodeEmbedder, newName string, flags uint32) syscall.Errno
	fsync(ctx context.Context, f gofs.FileHandle, flags uint32) syscall.Errno
	tmpfile(ctx context.Context, flags, mode uint32, out *fuse.EntryOut) (*gofs.Inode, gofs.FileHandle, uint32, syscall.Errno)
	link(ctx context.Context, target gofs.InodeEmbedder, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno)
	// filesRoot reports whether the model is a files model, whose root
	// package fs/filesdir serves.
	filesRoot() bool
}

// modelLayouts make a model node's layout type, by the shape of the
// layout's directories (layout.Layout.Dirs): a layout of a shape there
// is needs no type of its own.
var modelLayouts = map[layout.Dirs]func(*modelNode) modelLayout{
	layout.HexShards:  func(m *modelNode) modelLayout { return ucmbModel{shardModel{m}} },
	layout.MadeShards: func(m *modelNode) modelLayout { return posixModel{shardModel{m}} },
	layout.TreeDirs:   func(m *modelNode) modelLayout { return filesModel{m} },
}

// chosenLayout is a node's layout type and the name of the layout it
// serves.
type chosenLayout struct {
	name string
	l    modelLayout
}

// layout is the node's layout type: the one chosen when the node was
// made, chosen again only when the model's layout is no longer the one
// it serves (a model still empty may change it, and go-fuse keeps one
// node per number, so a model removed and made again gets this node
// back).
func (m *modelNode) layout() modelLayout {
	want := m.s.store.Models().Layout(m.model)
	if c := m.cur.Load(); c != nil && c.name == want {
		return c.l
	}
	c := &chosenLayout{name: want, l: modelLayouts[m.s.store.Models().LayoutOf(m.model).Dirs()](m)}
	m.cur.Store(c)
	return c.l
}

// OnForget frees the node's number and forgets the cached listing of a
// files model's root (the kernel keeps none of a node it forgot).
func (m *modelNode) OnForget() {
	m.s.inos.Release(ino.ModelName(m.model), m.ino)
	m.s.listings.Forget(vfs.FilesListingKey(m.model, ""), &m.Inode)
}

// Getattr describes the model directory (the root of a files model with
// the time of the last change of what it holds as its mtime).
func (m *modelNode) Getattr(ctx context.Context, f gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	m.layout().attr(&out.Attr)
	out.SetTimeout(m.s.opts.EntryTTL)
	return 0
}

// Lookup finds a shard directory, a private entry, or a file or
// directory at a files model's root.
func (m *modelNode) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	return m.layout().lookup(ctx, name, out)
}

// OpendirHandle opens the model directory.
func (m *modelNode) OpendirHandle(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	return m.layout().opendir(ctx)
}

// Mkdir makes what the layout lets one make at the model's root.
func (m *modelNode) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	return m.layout().mkdir(ctx, name, mode, out)
}

// Rmdir removes what the layout lets one remove at the model's root.
func (m *modelNode) Rmdir(ctx context.Context, name string) syscall.Errno {
	return m.layout().rmdir(ctx, name)
}

// Create makes a file where the layout allows one.
func (m *modelNode) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*gofs.Inode, gofs.FileHandle, uint32, syscall.Errno) {
	return m.layout().create(ctx, name, flags, mode, out)
}

// Unlink removes a file where the layout allows it.
func (m *modelNode) Unlink(ctx context.Context, name string) syscall.Errno {
	return m.layout().unlink(ctx, name)
}

// Rename renames where the layout allows it.
func (m *modelNode) Rename(ctx context.Context, name string, newParent gofs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	return m.layout().rename(ctx, name, newParent, newName, flags)
}

// Fsync makes what the model's root holds durable.
func (m *modelNode) Fsync(ctx context.Context, f gofs.FileHandle, flags uint32) syscall.Errno {
	return m.layout().fsync(ctx, f, flags)
}

// Tmpfile starts an O_TMPFILE file at the root of a files model; other
// layouts refuse it (EOPNOTSUPP, as a filesystem without O_TMPFILE).
func (m *modelNode) Tmpfile(ctx context.Context, flags uint32, mode uint32, out *fuse.EntryOut) (*gofs.Inode, gofs.FileHandle, uint32, syscall.Errno) {
	return m.layout().tmpfile(ctx, flags, mode, out)
}

// Link names a tmpfile at the root of a files model; anything else is
// refused.
func (m *modelNode) Link(ctx context.Context, target gofs.InodeEmbedder, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	return m.layout().link(ctx, target, name, out)
}
