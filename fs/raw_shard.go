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
	"github.com/ucmfs/ucmfs/vfs"
)

// The directories of a ucm-posix model (docs/spec.md §2): UCM
// PosixStore's shard directories, made by the store's own mkdir. A mkdir
// of a shard name of a new width records the width in the model's
// settings (store.AddShardWidth); from then on every shard directory of
// that width exists (a mkdir of another one is EEXIST, which UCM takes as
// success, or 0 when the kernel asks: see rawMkdir), listed, kept across
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

// rawMkdir makes a shard directory: a new width is recorded; a name of a
// width the model has exists already, and its mkdir succeeds too (the
// kernel answers EEXIST itself while it holds the entry; it asks only
// when it holds none, or a miss cached from before the width was
// recorded, and then cp and rsync take EEXIST for an error). Anything
// else is refused.
func (m *modelNode) rawMkdir(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	if w, ok := vfs.RawShard(m.s.store, m.model, name); ok {
		return m.rawChild(ctx, name, w, out), 0
	}
	w, ok := format.ParseRawShard(name)
	if !ok {
		return nil, m.s.fail("mkdir", m.model+"/"+name,
			fmt.Errorf("%w: %q is not a shard directory (data or 1..4 lowercase hex characters)", format.ErrName, name))
	}
	if err := m.s.store.Models().AddShardWidth(m.model, w); err != nil {
		return nil, m.s.fail("mkdir", m.model+"/"+name, err)
	}
	return m.rawChild(ctx, name, w, out), 0
}

// rawRmdir removes nothing: an empty shard directory stays (its width is
// the model's); one that holds blocks is ENOTEMPTY.
func (m *modelNode) rawRmdir(ctx context.Context, name string) syscall.Errno {
	w, ok := vfs.RawShard(m.s.store, m.model, name)
	if !ok {
		return errnoMissing
	}
	if len(vfs.MadeShard(m.model, name, w).Keys(m.s.store)) > 0 {
		return m.s.fail("rmdir", m.model+"/"+name, fmt.Errorf("shard still holds files: %w", store.ErrNotEmpty))
	}
	return 0
}
