package fs

import (
	"context"
	"fmt"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/fs/filesdir"
	"github.com/ucmfs/ucmfs/fs/ino"
	"github.com/ucmfs/ucmfs/fs/scratch"
	"github.com/ucmfs/ucmfs/vfs"
)

// The layout types of a model directory (modelLayout), one per layout.

// shardModel is what the two layouts of shard directories (ucmb,
// ucm-posix) share: files are refused at the root, which holds shard
// directories only.
type shardModel struct{ m *modelNode }

// attr is the model's own attributes, with a link for each shard
// directory (vfs.ModelShards).
func (l shardModel) attr(a *fuse.Attr) {
	l.m.s.modelAttr(a, uint32(2+vfs.ModelShards(l.m.s.store, l.m.model)), l.m.model)
}

// unlink is refused (EPERM).
func (l shardModel) unlink(ctx context.Context, name string) syscall.Errno {
	return l.m.dirCommon.Unlink(ctx, name)
}

// rename is refused (EPERM).
func (l shardModel) rename(ctx context.Context, name string, newParent gofs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	return l.m.common.Rename(ctx, name, newParent, newName, flags)
}

// fsync: the root lists shard directories only (fsState.syncDir).
func (l shardModel) fsync(ctx context.Context, f gofs.FileHandle, flags uint32) syscall.Errno {
	return l.m.dirCommon.Fsync(ctx, f, flags)
}

// tmpfile is refused (EOPNOTSUPP, as a filesystem without O_TMPFILE).
func (l shardModel) tmpfile(ctx context.Context, flags, mode uint32, out *fuse.EntryOut) (*gofs.Inode, gofs.FileHandle, uint32, syscall.Errno) {
	return nil, nil, 0, errnoNoTmpfile
}

// link is refused.
func (l shardModel) link(ctx context.Context, target gofs.InodeEmbedder, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	return l.m.common.Link(ctx, target, name, out)
}

// filesRoot: not a files model.
func (l shardModel) filesRoot() bool { return false }

// ucmbModel is a ucmb model: it always shows the 256 shard directories
// 00..ff.
type ucmbModel struct{ shardModel }

// lookup finds a shard directory.
func (l ucmbModel) lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	m := l.m
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

// opendir opens a listing of the dots and the 256 shard directories,
// taken now.
func (l ucmbModel) opendir(ctx context.Context) (gofs.FileHandle, uint32, syscall.Errno) {
	m := l.m
	ents := make([]fuse.DirEntry, 256)
	for i := range ents {
		sh := byte(i)
		ents[i] = fuse.DirEntry{
			Name: format.ShardName(sh),
			Mode: syscall.S_IFDIR,
			Ino:  m.s.inos.Peek(ino.ShardName(m.model, sh, "", -1)),
		}
	}
	return gofs.NewListDirStream(append(dots(m.ino, rootIno), ents...)), 0, 0
}

// mkdir is refused: the shard directories always exist (EEXIST),
// nothing else may be made here (EPERM: vfs.MkdirHexShard).
func (l ucmbModel) mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	return nil, l.m.s.refuse("mkdir", l.m.model+"/"+name, vfs.MkdirHexShard(name))
}

// rmdir of an empty shard directory succeeds and changes nothing; one
// that holds files: ENOTEMPTY (vfs.RmdirHexShard).
func (l ucmbModel) rmdir(ctx context.Context, name string) syscall.Errno {
	return l.m.s.refuse("rmdir", l.m.model+"/"+name, vfs.RmdirHexShard(l.m.s.store, l.m.model, name))
}

// create is refused (EPERM) but for a settings record copied in
// (model_record.go).
func (l ucmbModel) create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*gofs.Inode, gofs.FileHandle, uint32, syscall.Errno) {
	if name == recordName {
		return l.m.createRecord(ctx, out)
	}
	return l.m.dirCommon.Create(ctx, name, flags, mode, out)
}

// posixModel is a ucm-posix model: the shard directories its store made
// (raw_shard.go), and its private entries, the names starting with '.'
// (package fs/scratch).
type posixModel struct{ shardModel }

// lookup finds a private entry or a raw shard directory.
func (l posixModel) lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	if scratch.IsName(name) {
		return l.m.s.scratch.Lookup(ctx, &l.m.Inode, l.m.model, name, out)
	}
	return l.m.rawLookup(ctx, name, out)
}

// opendir opens a listing of the dots, the private entries and the
// shard directories of the model's widths, taken now.
func (l posixModel) opendir(ctx context.Context) (gofs.FileHandle, uint32, syscall.Errno) {
	m := l.m
	ents := append(dots(m.ino, rootIno), m.s.scratch.Entries(m.model)...)
	return gofs.NewListDirStream(append(ents, m.rawReaddir()...)), 0, 0
}

// mkdir makes a private directory or a shard directory (rawMkdir).
func (l posixModel) mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	if scratch.IsName(name) {
		return l.m.s.scratch.Mkdir(ctx, &l.m.Inode, l.m.model, name, mode, out)
	}
	return l.m.rawMkdir(ctx, name, out)
}

// rmdir removes a private directory; a shard directory stays
// (rawRmdir).
func (l posixModel) rmdir(ctx context.Context, name string) syscall.Errno {
	if scratch.IsName(name) {
		return l.m.s.scratch.Remove(l.m.model, name, true)
	}
	return l.m.rawRmdir(ctx, name)
}

// create makes a private file; anything else is refused (EPERM).
func (l posixModel) create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*gofs.Inode, gofs.FileHandle, uint32, syscall.Errno) {
	if scratch.IsName(name) {
		return l.m.s.scratch.Create(ctx, &l.m.Inode, l.m.model, name, flags, mode, out)
	}
	return l.m.dirCommon.Create(ctx, name, flags, mode, out)
}

// unlink removes a private file; anything else is refused (EPERM).
func (l posixModel) unlink(ctx context.Context, name string) syscall.Errno {
	if scratch.IsName(name) {
		return l.m.s.scratch.Remove(l.m.model, name, false)
	}
	return l.shardModel.unlink(ctx, name)
}

// rename renames between private entries; anything else is refused
// (EPERM).
func (l posixModel) rename(ctx context.Context, name string, newParent gofs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	if scratch.IsName(name) {
		return l.m.s.scratch.Rename(&l.m.Inode, l.m.model, name, newParent, newName, flags)
	}
	return l.shardModel.rename(ctx, name, newParent, newName, flags)
}

// filesModel is a files model: its directory is the root of the
// engine's tree, served as its other directories are (filesdir.Ops).
type filesModel struct{ m *modelNode }

// ops are the requests of the model's root.
func (l filesModel) ops() filesdir.Ops { return l.m.s.filesDirs.Root(&l.m.Inode, l.m.model) }

// attr is the model's attributes with the time of the last change of
// what its root holds as its mtime.
func (l filesModel) attr(a *fuse.Attr) { l.m.s.filesDirAttr(a, l.m.model, "") }

func (l filesModel) lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	return l.ops().Lookup(ctx, name, out)
}

func (l filesModel) opendir(ctx context.Context) (gofs.FileHandle, uint32, syscall.Errno) {
	return l.ops().Opendir(ctx)
}

func (l filesModel) mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	return l.ops().Mkdir(ctx, name, out)
}

func (l filesModel) rmdir(ctx context.Context, name string) syscall.Errno {
	return l.ops().Rmdir(name)
}

func (l filesModel) create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*gofs.Inode, gofs.FileHandle, uint32, syscall.Errno) {
	return l.ops().Create(ctx, name, flags, out)
}

func (l filesModel) unlink(ctx context.Context, name string) syscall.Errno {
	return l.ops().Unlink(ctx, name)
}

func (l filesModel) rename(ctx context.Context, name string, newParent gofs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	return l.ops().Rename(ctx, name, newParent, newName, flags)
}

func (l filesModel) fsync(ctx context.Context, f gofs.FileHandle, flags uint32) syscall.Errno {
	return l.ops().Fsync(ctx)
}

func (l filesModel) tmpfile(ctx context.Context, flags, mode uint32, out *fuse.EntryOut) (*gofs.Inode, gofs.FileHandle, uint32, syscall.Errno) {
	return l.ops().Tmpfile(ctx, flags, out)
}

func (l filesModel) link(ctx context.Context, target gofs.InodeEmbedder, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	return l.ops().Link(ctx, target, name, out)
}

func (l filesModel) filesRoot() bool { return true }
