package faultfs

import (
	"context"
	"path"
	"path/filepath"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// node is one file or directory of the mount: go-fuse's loopback node with
// every operation first passed through the FS rules. The loopback creates
// children as plain LoopbackNodes; WrapChild wraps each one as it is added
// to the tree, so every inode of the mount is a node.
type node struct {
	*fs.LoopbackNode
	fsys *FS
}

var (
	_ = (fs.NodeWrapChilder)((*node)(nil))
	_ = (fs.NodeLookuper)((*node)(nil))
	_ = (fs.NodeGetattrer)((*node)(nil))
	_ = (fs.NodeStatxer)((*node)(nil))
	_ = (fs.NodeSetattrer)((*node)(nil))
	_ = (fs.NodeOpener)((*node)(nil))
	_ = (fs.NodeCreater)((*node)(nil))
	_ = (fs.NodeTmpfiler)((*node)(nil))
	_ = (fs.NodeMknoder)((*node)(nil))
	_ = (fs.NodeMkdirer)((*node)(nil))
	_ = (fs.NodeRmdirer)((*node)(nil))
	_ = (fs.NodeUnlinker)((*node)(nil))
	_ = (fs.NodeRenamer)((*node)(nil))
	_ = (fs.NodeLinker)((*node)(nil))
	_ = (fs.NodeSymlinker)((*node)(nil))
	_ = (fs.NodeReadlinker)((*node)(nil))
	_ = (fs.NodeOpendirHandler)((*node)(nil))
	_ = (fs.NodeGetxattrer)((*node)(nil))
	_ = (fs.NodeListxattrer)((*node)(nil))
	_ = (fs.NodeSetxattrer)((*node)(nil))
	_ = (fs.NodeRemovexattrer)((*node)(nil))
	_ = (fs.NodeStatfser)((*node)(nil))
	_ = (fs.NodeCopyFileRanger)((*node)(nil))
)

// WrapChild wraps a loopback node created for a lookup, create, mkdir or
// link under n.
func (n *node) WrapChild(ctx context.Context, ops fs.InodeEmbedder) fs.InodeEmbedder {
	if lb, ok := ops.(*fs.LoopbackNode); ok {
		return &node{LoopbackNode: lb, fsys: n.fsys}
	}
	return ops
}

// relPath is n's path relative to the mount point ("" for the root).
func (n *node) relPath() string { return n.Path(nil) }

// childPath is the mount-relative path of name in directory n.
func (n *node) childPath(name string) string { return path.Join(n.relPath(), name) }

// backingPath is n's path in the backing directory.
func (n *node) backingPath() string {
	return filepath.Join(n.RootData.Path, n.relPath())
}

// Lookup resolves name in directory n (OpStat).
func (n *node) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if e := n.fsys.check(ctx, OpStat, n.childPath(name)); e != 0 {
		return nil, e
	}
	return n.LoopbackNode.Lookup(ctx, name, out)
}

// Getattr answers stat(2) (OpStat).
func (n *node) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	if e := n.fsys.check(ctx, OpStat, n.relPath()); e != 0 {
		return e
	}
	return n.LoopbackNode.Getattr(ctx, f, out)
}

// Statx answers statx(2) (OpStat).
func (n *node) Statx(ctx context.Context, f fs.FileHandle, flags uint32, mask uint32, out *fuse.StatxOut) syscall.Errno {
	if e := n.fsys.check(ctx, OpStat, n.relPath()); e != 0 {
		return e
	}
	return n.LoopbackNode.Statx(ctx, f, flags, mask, out)
}

// Setattr changes size, mode, owner or times (OpSetattr).
func (n *node) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if e := n.fsys.check(ctx, OpSetattr, n.relPath()); e != 0 {
		return e
	}
	return n.LoopbackNode.Setattr(ctx, f, in, out)
}

// Open opens an existing file (OpOpen) with direct I/O, so that every read
// and write reaches the rules.
func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if e := n.fsys.check(ctx, OpOpen, n.relPath()); e != 0 {
		return nil, 0, e
	}
	fh, fuseFlags, errno := n.LoopbackNode.Open(ctx, flags)
	if errno != 0 {
		return nil, 0, errno
	}
	return &file{inner: fh, n: n}, fuseFlags | fuse.FOPEN_DIRECT_IO, 0
}

// Create creates and opens name (OpCreate), with direct I/O.
func (n *node) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	if e := n.fsys.check(ctx, OpCreate, n.childPath(name)); e != 0 {
		return nil, nil, 0, e
	}
	ch, fh, fuseFlags, errno := n.LoopbackNode.Create(ctx, name, flags, mode, out)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	return ch, n.wrapFile(ch, fh), fuseFlags | fuse.FOPEN_DIRECT_IO, 0
}

// Tmpfile creates an unnamed file in directory n (OpCreate), with direct I/O.
func (n *node) Tmpfile(ctx context.Context, flags uint32, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	if e := n.fsys.check(ctx, OpCreate, n.relPath()); e != 0 {
		return nil, nil, 0, e
	}
	ch, fh, fuseFlags, errno := n.LoopbackNode.Tmpfile(ctx, flags, mode, out)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	return ch, n.wrapFile(ch, fh), fuseFlags | fuse.FOPEN_DIRECT_IO, 0
}

// wrapFile wraps the handle of a file just created as child ch of n.
func (n *node) wrapFile(ch *fs.Inode, fh fs.FileHandle) fs.FileHandle {
	owner, ok := ch.Operations().(*node)
	if !ok {
		owner = n
	}
	return &file{inner: fh, n: owner}
}

// Mknod creates a special file (OpCreate).
func (n *node) Mknod(ctx context.Context, name string, mode, rdev uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if e := n.fsys.check(ctx, OpCreate, n.childPath(name)); e != 0 {
		return nil, e
	}
	return n.LoopbackNode.Mknod(ctx, name, mode, rdev, out)
}

// Mkdir creates a directory (OpMkdir).
func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if e := n.fsys.check(ctx, OpMkdir, n.childPath(name)); e != 0 {
		return nil, e
	}
	return n.LoopbackNode.Mkdir(ctx, name, mode, out)
}

// Rmdir removes a directory (OpRmdir).
func (n *node) Rmdir(ctx context.Context, name string) syscall.Errno {
	if e := n.fsys.check(ctx, OpRmdir, n.childPath(name)); e != 0 {
		return e
	}
	return n.LoopbackNode.Rmdir(ctx, name)
}

// Unlink removes a file (OpUnlink).
func (n *node) Unlink(ctx context.Context, name string) syscall.Errno {
	if e := n.fsys.check(ctx, OpUnlink, n.childPath(name)); e != 0 {
		return e
	}
	return n.LoopbackNode.Unlink(ctx, name)
}

// Rename moves name to newName in newParent (OpRename). The renameat2(2)
// flags (RENAME_NOREPLACE, RENAME_EXCHANGE) reach the backing directory.
func (n *node) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	to := path.Join(newParent.EmbeddedInode().Path(nil), newName)
	if e := n.fsys.check(ctx, OpRename, n.childPath(name), to); e != 0 {
		return e
	}
	return n.LoopbackNode.Rename(ctx, name, newParent, newName, flags)
}

// Link makes a hard link to target named name (OpLink).
func (n *node) Link(ctx context.Context, target fs.InodeEmbedder, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if e := n.fsys.check(ctx, OpLink, n.childPath(name)); e != 0 {
		return nil, e
	}
	return n.LoopbackNode.Link(ctx, target, name, out)
}

// Symlink makes a symbolic link (OpLink).
func (n *node) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if e := n.fsys.check(ctx, OpLink, n.childPath(name)); e != 0 {
		return nil, e
	}
	return n.LoopbackNode.Symlink(ctx, target, name, out)
}

// Readlink reads a symbolic link (OpRead).
func (n *node) Readlink(ctx context.Context) ([]byte, syscall.Errno) {
	if e := n.fsys.check(ctx, OpRead, n.relPath()); e != 0 {
		return nil, e
	}
	return n.LoopbackNode.Readlink(ctx)
}

// OpendirHandle opens directory n for reading (OpReaddir).
func (n *node) OpendirHandle(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if e := n.fsys.check(ctx, OpReaddir, n.relPath()); e != 0 {
		return nil, 0, e
	}
	fh, fuseFlags, errno := n.LoopbackNode.OpendirHandle(ctx, flags)
	if errno != 0 {
		return nil, 0, errno
	}
	return &dir{inner: fh, n: n}, fuseFlags, 0
}

// Getxattr reads an extended attribute (OpGetxattr).
func (n *node) Getxattr(ctx context.Context, attr string, dest []byte) (uint32, syscall.Errno) {
	if e := n.fsys.check(ctx, OpGetxattr, n.relPath()); e != 0 {
		return 0, e
	}
	return n.LoopbackNode.Getxattr(ctx, attr, dest)
}

// Listxattr lists extended attribute names (OpGetxattr).
func (n *node) Listxattr(ctx context.Context, dest []byte) (uint32, syscall.Errno) {
	if e := n.fsys.check(ctx, OpGetxattr, n.relPath()); e != 0 {
		return 0, e
	}
	sz, err := unix.Llistxattr(n.backingPath(), dest)
	return uint32(sz), fs.ToErrno(err)
}

// Setxattr writes an extended attribute (OpSetxattr).
func (n *node) Setxattr(ctx context.Context, attr string, data []byte, flags uint32) syscall.Errno {
	if e := n.fsys.check(ctx, OpSetxattr, n.relPath()); e != 0 {
		return e
	}
	return n.LoopbackNode.Setxattr(ctx, attr, data, flags)
}

// Removexattr removes an extended attribute (OpSetxattr).
func (n *node) Removexattr(ctx context.Context, attr string) syscall.Errno {
	if e := n.fsys.check(ctx, OpSetxattr, n.relPath()); e != 0 {
		return e
	}
	return n.LoopbackNode.Removexattr(ctx, attr)
}

// Statfs reports the backing filesystem's capacity (OpStatfs).
func (n *node) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	if e := n.fsys.check(ctx, OpStatfs, n.relPath()); e != 0 {
		return e
	}
	return n.LoopbackNode.Statfs(ctx, out)
}

// CopyFileRange copies between two open files of the mount (OpRead on the
// source, then OpWrite on the target).
func (n *node) CopyFileRange(ctx context.Context, fhIn fs.FileHandle, offIn uint64,
	out *fs.Inode, fhOut fs.FileHandle, offOut uint64, size uint64, flags uint64) (uint32, syscall.Errno) {
	src, ok := fhIn.(*file)
	dst, ok2 := fhOut.(*file)
	if !ok || !ok2 {
		return 0, syscall.ENOTSUP
	}
	if e := n.fsys.check(ctx, OpRead, n.relPath()); e != 0 {
		return 0, e
	}
	if e := n.fsys.check(ctx, OpWrite, out.Path(nil)); e != 0 {
		return 0, e
	}
	return n.LoopbackNode.CopyFileRange(ctx, src.inner, offIn, out, dst.inner, offOut, size, flags)
}
