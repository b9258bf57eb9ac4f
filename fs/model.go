package fs

import (
	"context"
	"fmt"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/fs/ino"
	"github.com/ucmfs/ucmfs/store"
)

// modelNode is a model directory: it always shows the 256 shard
// directories 00..ff (ucm-posix: the shards its store made, raw_shard.go;
// files: the root of the engine's tree, files.go).
type modelNode struct {
	gofs.Inode
	dirCommon
	model string
	ino   uint64
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
)

func newModelNode(s *fsState, model string, ino uint64) *modelNode {
	return &modelNode{dirCommon: dirCommon{common: common{s: s}, what: model}, model: model, ino: ino}
}

// OnForget frees the node's number and forgets the cached listing of a
// files model's root (the kernel keeps none of a node it forgot).
func (m *modelNode) OnForget() {
	m.s.inos.Release(ino.ModelName(m.model), m.ino)
	m.s.forgetListing(filesListingKey(m.model, ""), &m.Inode)
}

// Getattr describes the model directory (the root of a files model with
// the time of the last change of what it holds as its mtime).
func (m *modelNode) Getattr(ctx context.Context, f gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	m.s.modelDirAttr(&out.Attr, m.model)
	out.SetTimeout(m.s.opts.EntryTTL)
	return 0
}

// Lookup finds a shard directory.
func (m *modelNode) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	if o, ok := m.files(); ok {
		return o.lookup(ctx, name, out)
	}
	if m.dotEntry(name) {
		return m.dotLookup(ctx, name, out)
	}
	if m.s.store.Models().Raw(m.model) {
		return m.rawLookup(ctx, name, out)
	}
	sh, ok := format.ParseShard(name)
	if !ok {
		m.s.debugFail("lookup", m.model+"/"+name, fmt.Errorf("%w: %q is not a shard directory 00..ff", format.ErrName, name))
		return nil, errnoMissing
	}
	ino := m.s.inos.Acquire(ino.ShardName(m.model, sh, "", -1))
	ch := newChild(ctx, &m.Inode, name, ino, syscall.S_IFDIR, func() gofs.InodeEmbedder {
		return m.s.madeShard(newShardNode(m.s, m.model, sh, ino))
	})
	m.s.shardAttr(&out.Attr, m.model, sh)
	ttl(out, m.s.opts.EntryTTL)
	return ch, 0
}

// OpendirHandle opens the model directory: the root of a files model as
// its other directories (files_list.go); else a listing of the dots and
// the 256 shard directories (of a ucm-posix model: those of its widths),
// taken now.
func (m *modelNode) OpendirHandle(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	if o, ok := m.files(); ok {
		return o.opendir(ctx)
	}
	return gofs.NewListDirStream(append(dots(m.ino, rootIno), m.entries()...)), 0, 0
}

// entries lists the shard directories of a ucmb or ucm-posix model.
func (m *modelNode) entries() []fuse.DirEntry {
	if m.s.store.Models().Raw(m.model) {
		return append(m.dotEntries(), m.rawReaddir()...)
	}
	ents := make([]fuse.DirEntry, 256)
	for i := range ents {
		sh := byte(i)
		ents[i] = fuse.DirEntry{
			Name: format.ShardName(sh),
			Mode: syscall.S_IFDIR,
			Ino:  m.s.inos.Peek(ino.ShardName(m.model, sh, "", -1)),
		}
	}
	return ents
}

// Mkdir is refused: the shard directories always exist (EEXIST), nothing
// else may be made here (EPERM). A ucm-posix model makes its shard
// directories this way (raw_shard.go).
func (m *modelNode) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	if o, ok := m.files(); ok {
		return o.mkdir(ctx, name, out)
	}
	if m.dotEntry(name) {
		return m.dotMkdir(ctx, name, mode, out)
	}
	if m.s.store.Models().Raw(m.model) {
		return m.rawMkdir(ctx, name, out)
	}
	if _, ok := format.ParseShard(name); ok {
		return nil, errnoExists
	}
	return nil, m.s.fail("mkdir", m.model+"/"+name, store.ErrImmutable)
}

// Rmdir of an empty shard directory succeeds and changes nothing (shard
// directories are virtual and keep being listed); this is what lets
// rm -r drop a model. A shard that holds files: ENOTEMPTY.
func (m *modelNode) Rmdir(ctx context.Context, name string) syscall.Errno {
	if o, ok := m.files(); ok {
		return o.rmdir(name)
	}
	if m.dotEntry(name) {
		return m.dotRemove(name, true)
	}
	if m.s.store.Models().Raw(m.model) {
		return m.rawRmdir(ctx, name)
	}
	sh, ok := format.ParseShard(name)
	if !ok {
		return errnoMissing
	}
	if len(m.s.store.Tiers().ShardKeys(m.model, sh)) > 0 {
		return m.s.fail("rmdir", m.model+"/"+name, fmt.Errorf("shard still holds files: %w", store.ErrNotEmpty))
	}
	return 0
}

// Create is refused (EPERM) but for a private entry of a ucm-posix model
// (model_dot.go).
func (m *modelNode) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*gofs.Inode, gofs.FileHandle, uint32, syscall.Errno) {
	if o, ok := m.files(); ok {
		return o.create(ctx, name, flags, out)
	}
	if m.dotEntry(name) {
		return m.dotCreate(ctx, name, flags, mode, out)
	}
	if name == recordName {
		return m.createRecord(ctx, out) // model_record.go
	}
	return m.dirCommon.Create(ctx, name, flags, mode, out)
}

// Unlink is refused (EPERM) but for a private entry of a ucm-posix model.
func (m *modelNode) Unlink(ctx context.Context, name string) syscall.Errno {
	if o, ok := m.files(); ok {
		return o.unlink(ctx, name)
	}
	if m.dotEntry(name) {
		return m.dotRemove(name, false)
	}
	return m.dirCommon.Unlink(ctx, name)
}

// Rename is refused (EPERM) but between private entries of a ucm-posix
// model.
func (m *modelNode) Rename(ctx context.Context, name string, newParent gofs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	if o, ok := m.files(); ok {
		return o.rename(ctx, name, newParent, newName, flags)
	}
	if m.dotEntry(name) {
		return m.dotRename(name, newParent, newName, flags)
	}
	return m.common.Rename(ctx, name, newParent, newName, flags)
}

// Fsync makes the files at the root of a files model durable; a ucmb or
// ucm-posix model lists shard directories only (fsState.syncDir).
func (m *modelNode) Fsync(ctx context.Context, f gofs.FileHandle, flags uint32) syscall.Errno {
	if o, ok := m.files(); ok {
		return o.fsync(ctx)
	}
	return m.dirCommon.Fsync(ctx, f, flags)
}

// files returns the requests of the model's root when it has the files
// layout.
func (m *modelNode) files() (filesOps, bool) {
	if !m.s.store.Models().Files(m.model) {
		return filesOps{}, false
	}
	return filesOps{s: m.s, node: &m.Inode, model: m.model}, true
}
