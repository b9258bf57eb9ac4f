package scratch

import (
	"context"
	"path/filepath"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/ucmfs/ucmfs/vfs"
	"golang.org/x/sys/unix"
)

// The nodes and descriptors of the private entries (dir.go): go-fuse's
// loopback over the scratch directory, with what they may take of the
// memory tier bounded (vfs/scratch_budget.go).

// MaxFile bounds a private entry's size: they are UCM's leases,
// heartbeats and small configs, and they live in the memory tier's tmpfs,
// which the blocks need (an 80 MiB one stopped every user's publishes).
const MaxFile = 1 << 20

// scratchNode is a loopback node whose attributes leave the inode number
// to go-fuse (the loopback fills in the scratch file's own, which is not
// the node's: ino.Scratch, and go-fuse would log every such answer), and
// whose new entries and growth the budget admits.
type scratchNode struct {
	gofs.LoopbackNode
	d *Dir
}

// newNode is the node of a private entry under r.
func (d *Dir) newNode(r *gofs.LoopbackRoot) *scratchNode {
	return &scratchNode{LoopbackNode: gofs.LoopbackNode{RootData: r}, d: d}
}

// path is the scratch path of name in n.
func (n *scratchNode) path(name string) string {
	return filepath.Join(n.RootData.Path, n.Path(n.Root()), name)
}

// Getattr is the loopback's, without its inode number.
func (n *scratchNode) Getattr(ctx context.Context, f gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	errno := n.LoopbackNode.Getattr(ctx, f, out)
	out.Ino = 0
	return errno
}

// Open is the loopback's, with a bounded descriptor (scratchFile).
func (n *scratchNode) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	fh, fl, errno := n.LoopbackNode.Open(ctx, flags)
	if errno != 0 {
		return nil, 0, errno
	}
	return n.d.newFile(ctx, fh), fl, 0
}

// Create is the loopback's (which gives the file to its caller), admitted
// by the budget, with a bounded descriptor (scratchFile).
func (n *scratchNode) Create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*gofs.Inode, gofs.FileHandle, uint32, syscall.Errno) {
	uid, reserved, errno := n.d.admitEntry(ctx, "create", n.path(name))
	if errno != 0 {
		return nil, nil, 0, errno
	}
	ch, fh, fl, errno := n.LoopbackNode.Create(ctx, name, flags, mode, out)
	if errno != 0 {
		n.d.budget.Settle(0, uid, -1, reserved)
		return nil, nil, 0, errno
	}
	f := n.d.newFile(ctx, fh)
	f.settle(ctx, uid, reserved)
	return ch, f, fl, 0
}

// Mkdir is the loopback's, admitted by the budget.
func (n *scratchNode) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	p := n.path(name)
	uid, reserved, errno := n.d.admitEntry(ctx, "mkdir", p)
	if errno != 0 {
		return nil, errno
	}
	ch, errno := n.LoopbackNode.Mkdir(ctx, name, mode, out)
	n.d.budget.SettlePath(p, uid, reserved, errno == 0)
	return ch, errno
}

// Unlink is the loopback's; the file's charge goes with its last name.
func (n *scratchNode) Unlink(ctx context.Context, name string) syscall.Errno {
	return n.d.removing(n.path(name), func() syscall.Errno { return n.LoopbackNode.Unlink(ctx, name) })
}

// Rmdir is the loopback's; the directory's charge goes with it.
func (n *scratchNode) Rmdir(ctx context.Context, name string) syscall.Errno {
	return n.d.removing(n.path(name), func() syscall.Errno { return n.LoopbackNode.Rmdir(ctx, name) })
}

// Rename is the loopback's; an entry it renames over loses that name.
func (n *scratchNode) Rename(ctx context.Context, name string, newParent gofs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	target := filepath.Join(n.RootData.Path, newParent.EmbeddedInode().Path(n.Root()), newName)
	op := func() syscall.Errno { return n.LoopbackNode.Rename(ctx, name, newParent, newName, flags) }
	if flags&unix.RENAME_EXCHANGE != 0 {
		return op()
	}
	return n.d.removing(target, op)
}

// Symlink refuses: the private entries are files and directories.
func (n *scratchNode) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	return nil, n.d.errnos.NoSpecial
}

// Link refuses: the private entries are files and directories.
func (n *scratchNode) Link(ctx context.Context, target gofs.InodeEmbedder, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	return nil, n.d.errnos.NoSpecial
}

// Mknod refuses: the private entries are files and directories.
func (n *scratchNode) Mknod(ctx context.Context, name string, mode, rdev uint32, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	return nil, n.d.errnos.NoSpecial
}

// Setxattr refuses, as for every other file of the mount outside
// user.ucm.*: extended attributes would take the tmpfs's memory outside
// the budget.
func (n *scratchNode) Setxattr(ctx context.Context, attr string, data []byte, flags uint32) syscall.Errno {
	return n.d.host.Fail("setxattr", n.path(""), vfs.ErrOtherNS)
}

// CopyFileRange declines: the kernel copies with writes, which the budget
// admits.
func (n *scratchNode) CopyFileRange(ctx context.Context, fhIn gofs.FileHandle, offIn uint64, out *gofs.Inode, fhOut gofs.FileHandle, offOut uint64, l uint64, flags uint64) (uint32, syscall.Errno) {
	return 0, n.d.errnos.NoCopy
}

// Setattr is the loopback's, within MaxFile, without its inode
// number; a truncate settles the file's charge (a larger size allocates
// nothing in the tmpfs until written).
func (n *scratchNode) Setattr(ctx context.Context, f gofs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if sz, ok := in.GetSize(); ok && sz > MaxFile {
		return n.d.errnos.TooBig
	}
	errno := n.LoopbackNode.Setattr(ctx, f, in, out)
	if _, ok := in.GetSize(); ok && errno == 0 && f == nil {
		n.d.budget.SettlePath(n.path(""), n.d.uid(ctx), 0, true)
	}
	out.Ino = 0
	return errno
}

// admitEntry admits a new entry at path p for its caller
// (vfs.ScratchBudget.AdmitPath): the caller's uid and the bytes reserved,
// or the budget's errno.
func (d *Dir) admitEntry(ctx context.Context, op, p string) (uint32, int64, syscall.Errno) {
	uid, _ := d.host.Caller(ctx)
	reserved, err := d.budget.AdmitPath(uid, p)
	if err != nil {
		return 0, 0, d.host.Fail(op, p, err)
	}
	return uid, reserved, 0
}

// removing runs op, which takes the name at path p (a removal or a rename
// over it), and releases the charge of what p named if it was its last
// name (vfs.ScratchBudget.Removing).
func (d *Dir) removing(p string, op func() syscall.Errno) syscall.Errno {
	gone := d.budget.Removing(p)
	errno := op()
	if errno == 0 {
		gone()
	}
	return errno
}

// scratchFile is a private file's descriptor: the loopback's, served by
// the daemon (never passthrough, so that every write is seen), bounded to
// MaxFile bytes (EFBIG past it), each growth admitted by the
// budget.
type scratchFile struct {
	*gofs.LoopbackFile
	d   *Dir
	ino uint64 // the file's inode number in the tmpfs
}

// newFile wraps a loopback file handle and counts it open.
func (d *Dir) newFile(ctx context.Context, fh gofs.FileHandle) *scratchFile {
	f := &scratchFile{LoopbackFile: fh.(*gofs.LoopbackFile), d: d}
	var a fuse.AttrOut
	if f.LoopbackFile.Getattr(ctx, &a) == 0 {
		f.ino = a.Ino
	}
	d.budget.Opened(f.ino)
	return f
}

// settle sets the file's charge to what it allocates now, in place of
// the reserved bytes admitted to uid.
func (f *scratchFile) settle(ctx context.Context, uid uint32, reserved int64) {
	var a fuse.AttrOut
	alloc := int64(-1)
	if f.LoopbackFile.Getattr(ctx, &a) == 0 {
		alloc = int64(a.Blocks) * 512
	}
	f.d.budget.Settle(f.ino, f.d.budget.Owner(f.ino, uid), alloc, reserved)
}

// grow runs op, a change that may allocate up to n more bytes ending at
// end, once the budget admits them.
func (f *scratchFile) grow(ctx context.Context, op string, end, n int64, do func() syscall.Errno) syscall.Errno {
	if end > MaxFile {
		return f.d.errnos.TooBig
	}
	uid := f.d.budget.Owner(f.ino, f.d.uid(ctx))
	n = vfs.Pages(n)
	if err := f.d.budget.Reserve(uid, n); err != nil {
		return f.d.host.Fail(op, "private file", err)
	}
	errno := do()
	f.settle(ctx, uid, n)
	return errno
}

// PassthroughFd declines passthrough: the daemon sees every write.
func (f *scratchFile) PassthroughFd() (int, bool) { return -1, false }

// Write writes once the budget admits the bytes.
func (f *scratchFile) Write(ctx context.Context, data []byte, off int64) (written uint32, errno syscall.Errno) {
	if off < 0 {
		return 0, f.d.errnos.TooBig
	}
	errno = f.grow(ctx, "write", off+int64(len(data)), int64(len(data)), func() syscall.Errno {
		written, errno = f.LoopbackFile.Write(ctx, data, off)
		return errno
	})
	return written, errno
}

// Writev writes once the budget admits the bytes.
func (f *scratchFile) Writev(ctx context.Context, data [][]byte, off int64) (written uint32, errno syscall.Errno) {
	n := int64(0)
	for _, d := range data {
		n += int64(len(d))
	}
	if off < 0 {
		return 0, f.d.errnos.TooBig
	}
	errno = f.grow(ctx, "write", off+n, n, func() syscall.Errno {
		written, errno = f.LoopbackFile.Writev(ctx, data, off)
		return errno
	})
	return written, errno
}

// Allocate reserves once the budget admits the bytes.
func (f *scratchFile) Allocate(ctx context.Context, off, size uint64, mode uint32) syscall.Errno {
	return f.grow(ctx, "fallocate", int64(off+size), int64(size), func() syscall.Errno {
		return f.LoopbackFile.Allocate(ctx, off, size, mode)
	})
}

// Setattr refuses a size past MaxFile, and settles the charge
// after a truncate.
func (f *scratchFile) Setattr(ctx context.Context, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	sz, ok := in.GetSize()
	if ok && sz > MaxFile {
		return f.d.errnos.TooBig
	}
	errno := f.LoopbackFile.Setattr(ctx, in, out)
	if ok && errno == 0 {
		f.settle(ctx, f.d.uid(ctx), 0)
	}
	return errno
}

// Release closes the descriptor; the last one of a file with no name left
// takes its charge out.
func (f *scratchFile) Release(ctx context.Context) syscall.Errno {
	var a fuse.AttrOut
	nlink := uint32(1)
	if f.LoopbackFile.Getattr(ctx, &a) == 0 {
		nlink = a.Nlink
	}
	errno := f.LoopbackFile.Release(ctx)
	f.d.budget.Closed(f.ino, nlink)
	return errno
}
