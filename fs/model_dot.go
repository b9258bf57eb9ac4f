package fs

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
	"github.com/ucmfs/ucmfs/store"
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

// scratchRoot is the loopback root of the private entries, made at first
// use.
type scratchRoot struct {
	once sync.Once
	root *gofs.LoopbackRoot
	err  error
}

// scratch returns the loopback root, making <memtier>/.scratch.
func (s *fsState) scratch() (*gofs.LoopbackRoot, error) {
	s.scratchDir.once.Do(func() {
		dir := filepath.Join(s.store.TierDirs()[store.MemoryTier], ".scratch")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			s.scratchDir.err = err
			return
		}
		var st unix.Stat_t
		if err := unix.Stat(dir, &st); err != nil {
			s.scratchDir.err = err
			return
		}
		// idFromStat gives (dev ^ Dev) rotated by 32 bits ^ st_ino: this
		// Dev puts ino.Scratch in the top bits of every number.
		dev := st.Dev ^ uint64(ino.Scratch)<<(ino.Shift-32)
		s.scratchDir.root = &gofs.LoopbackRoot{Path: dir, Dev: dev, RootNode: s.rootNode,
			NewNode: func(r *gofs.LoopbackRoot, _ *gofs.Inode, _ string, _ *syscall.Stat_t) gofs.InodeEmbedder {
				return s.newScratchNode(r)
			}}
	})
	return s.scratchDir.root, s.scratchDir.err
}

// isDotName reports whether name is a private entry's of a ucm-posix
// model (posixModel).
func isDotName(name string) bool {
	return strings.HasPrefix(name, ".") && name != "." && name != ".."
}

// dotPath is the scratch path of private entry name of m.
func (m *modelNode) dotPath(name string) (string, *gofs.LoopbackRoot, error) {
	r, err := m.s.scratch()
	if err != nil {
		return "", nil, err
	}
	dir := filepath.Join(r.Path, m.model)
	return filepath.Join(dir, name), r, os.MkdirAll(dir, 0o755)
}

// dotChild returns the loopback node of private entry name, which st
// describes, and fills out.
func (m *modelNode) dotChild(ctx context.Context, r *gofs.LoopbackRoot, name string, st *unix.Stat_t, out *fuse.EntryOut) *gofs.Inode {
	ino := uint64(ino.Scratch)<<ino.Shift ^ st.Ino
	ch := newChild(ctx, &m.Inode, name, ino, st.Mode&syscall.S_IFMT, func() gofs.InodeEmbedder {
		return m.s.newScratchNode(r)
	})
	var sst syscall.Stat_t
	if syscall.Lstat(filepath.Join(r.Path, m.model, name), &sst) == nil {
		out.Attr.FromStat(&sst)
	}
	out.Attr.Ino = ino
	ttl(out, 0)
	return ch
}

// dotLookup finds a private entry.
func (m *modelNode) dotLookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	p, r, err := m.dotPath(name)
	if err != nil {
		return nil, m.s.fail("lookup", m.model+"/"+name, err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		return nil, toErrno(err)
	}
	return m.dotChild(ctx, r, name, &st, out), 0
}

// dotMkdir makes a private directory, its caller's, once the budget
// admits it (vfs/scratch_budget.go).
func (m *modelNode) dotMkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	p, r, err := m.dotPath(name)
	if err != nil {
		return nil, toErrno(err)
	}
	uid, reserved, errno := m.s.admitEntry(ctx, "mkdir", p)
	if errno != 0 {
		return nil, errno
	}
	err = unix.Mkdir(p, mode)
	m.s.scratchUse.SettlePath(p, uid, reserved, err == nil)
	if err == nil {
		c := callerProc(ctx)
		err = unix.Lchown(p, int(c.Uid), int(c.Gid))
	}
	var st unix.Stat_t
	if err == nil {
		err = unix.Lstat(p, &st)
	}
	if err != nil {
		return nil, toErrno(err)
	}
	return m.dotChild(ctx, r, name, &st, out), 0
}

// dotCreate makes (or opens) a private file, its caller's, once the
// budget admits it (vfs/scratch_budget.go).
func (m *modelNode) dotCreate(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*gofs.Inode, gofs.FileHandle, uint32, syscall.Errno) {
	p, r, err := m.dotPath(name)
	if err != nil {
		return nil, nil, 0, m.s.fail("create", m.model+"/"+name, err)
	}
	uid, reserved, errno := m.s.admitEntry(ctx, "create", p)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	fd, err := unix.Open(p, int(flags)|unix.O_CREAT|unix.O_CLOEXEC, mode)
	if err != nil {
		m.s.scratchUse.Settle(0, uid, -1, reserved)
		return nil, nil, 0, toErrno(err)
	}
	var st unix.Stat_t
	err = unix.Fstat(fd, &st)
	if c := callerProc(ctx); err == nil && st.Uid != c.Uid { // made now, not an existing one opened
		err = unix.Fchown(fd, int(c.Uid), int(c.Gid))
	}
	if err != nil {
		unix.Close(fd)
		m.s.scratchUse.Settle(0, uid, -1, reserved)
		return nil, nil, 0, toErrno(err)
	}
	f := m.s.newScratchFile(ctx, gofs.NewLoopbackFile(fd))
	f.settle(ctx, uid, reserved)
	return m.dotChild(ctx, r, name, &st, out), f, 0, 0
}

// dotRemove unlinks a private file or removes a private directory.
func (m *modelNode) dotRemove(name string, dir bool) syscall.Errno {
	p, _, err := m.dotPath(name)
	if err != nil {
		return toErrno(err)
	}
	return m.s.removing(p, func() syscall.Errno {
		if dir {
			return toErrno(unix.Rmdir(p))
		}
		return toErrno(unix.Unlink(p))
	})
}

// dotRename renames a private entry to another private name of m.
func (m *modelNode) dotRename(name string, newParent gofs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	if newParent.EmbeddedInode() != &m.Inode || !isDotName(newName) {
		return m.s.fail("rename", m.model+"/"+name+" -> "+newName, errCrossDir)
	}
	p, _, err := m.dotPath(name)
	q, _, err2 := m.dotPath(newName)
	if err == nil {
		err = err2
	}
	if err != nil {
		return toErrno(err)
	}
	op := func() syscall.Errno { return toErrno(unix.Renameat2(unix.AT_FDCWD, p, unix.AT_FDCWD, q, uint(flags))) }
	if flags&unix.RENAME_EXCHANGE != 0 {
		return op()
	}
	return m.s.removing(q, op)
}

// dotEntries lists the private entries of m.
func (m *modelNode) dotEntries() []fuse.DirEntry {
	r, err := m.s.scratch()
	if err != nil {
		return nil
	}
	ents, err := os.ReadDir(filepath.Join(r.Path, m.model))
	if err != nil {
		return nil
	}
	out := make([]fuse.DirEntry, 0, len(ents))
	for _, e := range ents {
		var st unix.Stat_t
		if unix.Lstat(filepath.Join(r.Path, m.model, e.Name()), &st) != nil {
			continue
		}
		out = append(out, fuse.DirEntry{Name: e.Name(), Mode: st.Mode & syscall.S_IFMT, Ino: uint64(ino.Scratch)<<ino.Shift ^ st.Ino})
	}
	return out
}
