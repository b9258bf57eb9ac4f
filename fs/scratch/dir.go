package scratch

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/ucmfs/ucmfs/fs/ino"
	"github.com/ucmfs/ucmfs/vfs"
	"golang.org/x/sys/unix"
)

// The private entries of a ucm-posix model (docs/semantics.md): names
// starting with '.' at the model's root, which UCM's PosixStore keeps
// beside its shard directories (its GC lease: the .ucm_gc.lock directory
// with a heartbeat file in it, .ucm_gc.checktime, .ucm_gc.stale.*). They
// are no blocks: plain files and directories of a scratch directory in the
// memory tier (<memtier>/.scratch/<model>/), served by go-fuse's loopback
// nodes, shared by every process of the mount, gone at a restart (a lease
// is taken again). Their inode numbers carry ino.Scratch.

// Host is what the private entries ask of the adapter (package fs).
type Host interface {
	// Fail turns err into an errno and logs the refused request.
	Fail(op, path string, err error) syscall.Errno
	// Errno turns err into an errno, logging nothing.
	Errno(err error) syscall.Errno
	// Caller is the user and group of the process that sent the request.
	Caller(ctx context.Context) (uid, gid uint32)
	// Root is the mount's root node.
	Root() gofs.InodeEmbedder
}

// Errnos are the plain answers of the private entries, which package fs
// decides (fs/errno.go).
type Errnos struct {
	TooBig    syscall.Errno // a private entry past its size bound (MaxFile)
	NoSpecial syscall.Errno // a symlink, hard link or device node
	NoCopy    syscall.Errno // copy_file_range into a private file
}

// Dir is the private entries of every ucm-posix model of a mount: the
// loopback root over the scratch directory, made at first use, and what
// the entries take of the memory tier (vfs.ScratchBudget).
type Dir struct {
	host     Host
	errnos   Errnos
	crossDir error         // the error of a rename out of the private entries (EXDEV)
	memTier  func() string // the memory tier's directory

	once   sync.Once
	root   *gofs.LoopbackRoot
	err    error
	budget vfs.ScratchBudget
}

// New returns the private entries kept under .scratch in the memory
// tier's directory (memTier, asked at first use), served for host; a
// rename out of them fails with crossDir.
func New(host Host, errnos Errnos, crossDir error, memTier func() string) *Dir {
	return &Dir{host: host, errnos: errnos, crossDir: crossDir, memTier: memTier}
}

// uid is the caller's user.
func (d *Dir) uid(ctx context.Context) uint32 {
	uid, _ := d.host.Caller(ctx)
	return uid
}

// scratch returns the loopback root, making <memtier>/.scratch.
func (d *Dir) scratch() (*gofs.LoopbackRoot, error) {
	d.once.Do(func() {
		dir := filepath.Join(d.memTier(), ".scratch")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			d.err = err
			return
		}
		var st unix.Stat_t
		if err := unix.Stat(dir, &st); err != nil {
			d.err = err
			return
		}
		// idFromStat gives (dev ^ Dev) rotated by 32 bits ^ st_ino: this
		// Dev puts ino.Scratch in the top bits of every number.
		dev := st.Dev ^ uint64(ino.Scratch)<<(ino.Shift-32)
		d.root = &gofs.LoopbackRoot{Path: dir, Dev: dev, RootNode: d.host.Root(),
			NewNode: func(r *gofs.LoopbackRoot, _ *gofs.Inode, _ string, _ *syscall.Stat_t) gofs.InodeEmbedder {
				return d.newNode(r)
			}}
	})
	return d.root, d.err
}

// IsName reports whether name is a private entry's of a ucm-posix model.
func IsName(name string) bool {
	return strings.HasPrefix(name, ".") && name != "." && name != ".."
}

// path is the scratch path of private entry name of model.
func (d *Dir) path(model, name string) (string, *gofs.LoopbackRoot, error) {
	r, err := d.scratch()
	if err != nil {
		return "", nil, err
	}
	dir := filepath.Join(r.Path, model)
	return filepath.Join(dir, name), r, os.MkdirAll(dir, 0o755)
}

// child returns the loopback node of private entry name of model, under
// the model's node parent, which st describes, and fills out.
func (d *Dir) child(ctx context.Context, parent *gofs.Inode, model string, r *gofs.LoopbackRoot, name string, st *unix.Stat_t, out *fuse.EntryOut) *gofs.Inode {
	n := uint64(ino.Scratch)<<ino.Shift ^ st.Ino
	ch := parent.GetChild(name)
	if ch == nil || ch.StableAttr().Ino != n {
		ch = parent.NewInode(ctx, d.newNode(r), gofs.StableAttr{Mode: st.Mode & syscall.S_IFMT, Ino: n})
	}
	var sst syscall.Stat_t
	if syscall.Lstat(filepath.Join(r.Path, model, name), &sst) == nil {
		out.Attr.FromStat(&sst)
	}
	out.Attr.Ino = n
	out.SetEntryTimeout(0)
	out.SetAttrTimeout(0)
	return ch
}

// Lookup finds private entry name of model, whose node is parent.
func (d *Dir) Lookup(ctx context.Context, parent *gofs.Inode, model, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	p, r, err := d.path(model, name)
	if err != nil {
		return nil, d.host.Fail("lookup", model+"/"+name, err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		return nil, d.host.Errno(err)
	}
	return d.child(ctx, parent, model, r, name, &st, out), 0
}

// Mkdir makes a private directory, its caller's, once the budget admits
// it (vfs/scratch_budget.go).
func (d *Dir) Mkdir(ctx context.Context, parent *gofs.Inode, model, name string, mode uint32, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	p, r, err := d.path(model, name)
	if err != nil {
		return nil, d.host.Errno(err)
	}
	uid, reserved, errno := d.admitEntry(ctx, "mkdir", p)
	if errno != 0 {
		return nil, errno
	}
	err = unix.Mkdir(p, mode)
	d.budget.SettlePath(p, uid, reserved, err == nil)
	if err == nil {
		u, g := d.host.Caller(ctx)
		err = unix.Lchown(p, int(u), int(g))
	}
	var st unix.Stat_t
	if err == nil {
		err = unix.Lstat(p, &st)
	}
	if err != nil {
		return nil, d.host.Errno(err)
	}
	return d.child(ctx, parent, model, r, name, &st, out), 0
}

// Create makes (or opens) a private file, its caller's, once the budget
// admits it (vfs/scratch_budget.go).
func (d *Dir) Create(ctx context.Context, parent *gofs.Inode, model, name string, flags, mode uint32, out *fuse.EntryOut) (*gofs.Inode, gofs.FileHandle, uint32, syscall.Errno) {
	p, r, err := d.path(model, name)
	if err != nil {
		return nil, nil, 0, d.host.Fail("create", model+"/"+name, err)
	}
	uid, reserved, errno := d.admitEntry(ctx, "create", p)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	fd, err := unix.Open(p, int(flags)|unix.O_CREAT|unix.O_CLOEXEC, mode)
	if err != nil {
		d.budget.Settle(0, uid, -1, reserved)
		return nil, nil, 0, d.host.Errno(err)
	}
	var st unix.Stat_t
	err = unix.Fstat(fd, &st)
	if u, g := d.host.Caller(ctx); err == nil && st.Uid != u { // made now, not an existing one opened
		err = unix.Fchown(fd, int(u), int(g))
	}
	if err != nil {
		unix.Close(fd)
		d.budget.Settle(0, uid, -1, reserved)
		return nil, nil, 0, d.host.Errno(err)
	}
	f := d.newFile(ctx, gofs.NewLoopbackFile(fd))
	f.settle(ctx, uid, reserved)
	return d.child(ctx, parent, model, r, name, &st, out), f, 0, 0
}

// Remove unlinks a private file or removes a private directory.
func (d *Dir) Remove(model, name string, dir bool) syscall.Errno {
	p, _, err := d.path(model, name)
	if err != nil {
		return d.host.Errno(err)
	}
	return d.removing(p, func() syscall.Errno {
		if dir {
			return d.host.Errno(unix.Rmdir(p))
		}
		return d.host.Errno(unix.Unlink(p))
	})
}

// Rename renames private entry name of model, whose node is parent, to
// another private name of it.
func (d *Dir) Rename(parent *gofs.Inode, model, name string, newParent gofs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	if newParent.EmbeddedInode() != parent || !IsName(newName) {
		return d.host.Fail("rename", model+"/"+name+" -> "+newName, d.crossDir)
	}
	p, _, err := d.path(model, name)
	q, _, err2 := d.path(model, newName)
	if err == nil {
		err = err2
	}
	if err != nil {
		return d.host.Errno(err)
	}
	op := func() syscall.Errno {
		return d.host.Errno(unix.Renameat2(unix.AT_FDCWD, p, unix.AT_FDCWD, q, uint(flags)))
	}
	if flags&unix.RENAME_EXCHANGE != 0 {
		return op()
	}
	return d.removing(q, op)
}

// Entries lists the private entries of model.
func (d *Dir) Entries(model string) []fuse.DirEntry {
	r, err := d.scratch()
	if err != nil {
		return nil
	}
	ents, err := os.ReadDir(filepath.Join(r.Path, model))
	if err != nil {
		return nil
	}
	out := make([]fuse.DirEntry, 0, len(ents))
	for _, e := range ents {
		var st unix.Stat_t
		if unix.Lstat(filepath.Join(r.Path, model, e.Name()), &st) != nil {
			continue
		}
		out = append(out, fuse.DirEntry{Name: e.Name(), Mode: st.Mode & syscall.S_IFMT, Ino: uint64(ino.Scratch)<<ino.Shift ^ st.Ino})
	}
	return out
}
