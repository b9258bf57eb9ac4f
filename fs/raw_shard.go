package fs

import (
	"context"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/ucmfs/ucmfs/fs/ino"
	"github.com/ucmfs/ucmfs/vfs"
)

// The directories of a ucm-posix model (docs/spec.md §2): UCM
// PosixStore's shard directories, made by the store's own mkdir. A mkdir
// of a shard name of a new width records the width in the model's
// settings (store.AddShardWidth); from then on every shard directory of
// that width exists (a mkdir of another one is EEXIST, which UCM takes as
// success, or 0 when the kernel asks: see vfs.MkdirRawShard), listed, kept across
// restarts, like the 256 of a ucmb model.

// newRawShardNode is the node of raw shard directory dir (width w) of
// model.
func newRawShardNode(s *fsState, model, dir string, w int, ino uint64) *shardNode {
	return &shardNode{
		dirCommon: dirCommon{common: common{s: s}, what: model + "/" + dir, anyMode: true},
		sh:        vfs.MadeShard(model, dir, w), ino: ino,
		attr: func(a *fuse.Attr) { s.modelAttr(a, 2, model) },
	}
}

// rawLookup finds a raw shard directory.
func (m *modelNode) rawLookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	w, ok := vfs.RawShard(m.s.store, m.model, name)
	if !ok {
		return nil, errnoMissing
	}
	return m.rawChild(ctx, name, w, out), 0
}

// rawChild returns the node of raw shard directory name (width w).
func (m *modelNode) rawChild(ctx context.Context, name string, w int, out *fuse.EntryOut) *gofs.Inode {
	ino := m.s.inos.Acquire(ino.ShardName(m.model, 0, name, w))
	ch := newChild(ctx, &m.Inode, name, ino, syscall.S_IFDIR, func() gofs.InodeEmbedder {
		return m.s.madeShard(newRawShardNode(m.s, m.model, name, w, ino))
	})
	m.s.modelAttr(&out.Attr, 2, m.model)
	ttl(out, m.s.opts.EntryTTL)
	return ch
}

// rawReaddir lists every shard directory of the widths the model has.
func (m *modelNode) rawReaddir() []fuse.DirEntry {
	var ents []fuse.DirEntry
	vfs.EachRawShard(m.s.store.Models().ShardWidths(m.model), func(name string, w int) {
		ents = append(ents, fuse.DirEntry{Name: name, Mode: syscall.S_IFDIR,
			Ino: m.s.inos.Peek(ino.ShardName(m.model, 0, name, w))})
	})
	return ents
}

// rawMkdir makes a shard directory, or finds one of a width the model
// has (vfs.MkdirRawShard).
func (m *modelNode) rawMkdir(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	w, err := vfs.MkdirRawShard(m.s.store, m.model, name)
	if err != nil {
		return nil, m.s.fail("mkdir", m.model+"/"+name, err)
	}
	return m.rawChild(ctx, name, w, out), 0
}

// rawRmdir removes nothing: an empty shard directory stays; one that
// holds blocks is ENOTEMPTY (vfs.RmdirRawShard).
func (m *modelNode) rawRmdir(ctx context.Context, name string) syscall.Errno {
	return m.s.refuse("rmdir", m.model+"/"+name, vfs.RmdirRawShard(m.s.store, m.model, name))
}
