package fs

import (
	"context"
	"errors"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/vfs"
)

// flock(2) locks, kept by the daemon by name (vfs/flock.go says why and
// how); this file answers the kernel's lock requests from that table.

// flock answers a lock request on an open file of key: flock locks from
// the table, anything else (a POSIX lock, which the mount does not claim)
// ENOTSUP.
func (s *fsState) flock(ctx context.Context, key format.Key, owner uint64, lk *fuse.FileLock, flags uint32, wait bool) syscall.Errno {
	if flags&fuse.FUSE_LK_FLOCK == 0 {
		return errnoNoLock
	}
	return s.flockSet(ctx, vfs.FlockName(key), owner, lk.Typ, wait)
}

// flockSet takes or drops owner's flock lock on name (vfs.Flocks.Set),
// and logs a wait the transport had no room for. Over io_uring a wait
// holds a ring entry of the caller's queue (uring.Transport.HoldEntry).
func (s *fsState) flockSet(ctx context.Context, name string, owner uint64, typ uint32, wait bool) syscall.Errno {
	var hold vfs.HoldEntry
	if r := s.ring.Load(); r != nil {
		hold = func() (func(), error) { return r.HoldEntry(callerUid(ctx)) }
	}
	err := s.flocks.Set(ctx, name, owner, typ, wait, hold)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, vfs.ErrFlockNoEntry):
		return s.fail("flock", "", err)
	}
	return toErrno(err)
}

// Setlk and Setlkw of a published file's descriptor (flock).
func (h *readHandle) Setlk(ctx context.Context, owner uint64, lk *fuse.FileLock, flags uint32) syscall.Errno {
	return h.node.s.flock(ctx, h.node.served(), owner, lk, flags, false)
}
func (h *readHandle) Setlkw(ctx context.Context, owner uint64, lk *fuse.FileLock, flags uint32) syscall.Errno {
	return h.node.s.flock(ctx, h.node.served(), owner, lk, flags, true)
}
