package fs

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/fs/uring"
)

// flock(2) locks, kept by the daemon (the mount claims FLOCK_LOCKS on
// /dev/fuse).
//
// Left to the kernel, a flock lives on an inode. In a files model every
// process that opens a file for writing gets an inode of its own (the new
// version it writes, pending.go), so the lock-file idiom, open(O_RDWR |
// O_CREAT) then flock(LOCK_EX), excluded no one: two processes both held
// the lock. The daemon keeps the locks by name instead: a published file,
// its versions being written and a file being written under that name
// share one lock (flockName), as the one inode of a local disk does. Any
// other node (a directory, a control file) has a lock of its own, by node
// id, as the kernel kept it (light.Host.Flock).
//
// A lock's owner is the open file (the kernel's lock owner of a flock):
// LOCK_UN drops it, and so does the open file's last close (RELEASE with
// FUSE_RELEASE_FLOCK_UNLOCK, light.Host.FlockRelease). That release comes
// after close(2) returns (the kernel sends it in the background), so a
// LOCK_NB of another process right after the close may still find the
// lock taken; an explicit LOCK_UN before the close is synchronous. A
// conversion (shared to exclusive, or back) keeps the lock held while it
// waits, where Linux drops it first. POSIX locks (fcntl) stay the
// kernel's, per inode: two processes writing one file of a files model
// each write their own version, which no byte-range lock can order.
//
// Over io_uring a blocking flock waits in its handler, which there holds
// one of the few ring entries of its CPU's queue (each entry serves one
// request at a time): with as many waiters on one CPU as its queue has
// entries, the holder's unlock from that CPU would find no entry to be
// served by (measured, before the queues grew: a deadlock). So a handler
// about to wait tells the transport first (uring.Transport.HoldEntry),
// which registers one more entry for the queue when too few are left; a
// user has at most uring.MaxWaits waits on one queue, and one more is
// ENOLCK (errFlockNoEntry), as the kernel answers when it has no room for
// another lock. go-fuse's /dev/fuse loop starts a reader whenever every
// reader is busy, so waiters there hold up nothing.
//
// The table holds an entry per lock held or waited for, and an owner's
// names: no more than the open files that took a lock.

// Errors of flock, mapped in errno.go.
var (
	// errFlockBusy: another open file holds the lock (LOCK_NB).
	errFlockBusy = errors.New("the lock is held by another open file")
	// errFlockInterrupted: a blocking flock was interrupted.
	errFlockInterrupted = errors.New("interrupted while waiting for the lock")
	// errFlockNoEntry: the transport has no room for one more waiting
	// request on this CPU (uring.Transport.HoldEntry).
	errFlockNoEntry = errors.New("no room for one more waiting lock request")
)

// flockTable holds the flock locks of the mount.
type flockTable struct {
	mu     sync.Mutex
	locks  map[string]*flockState
	owners map[uint64]map[string]struct{} // the names each owner holds
	// ring is the io_uring transport serving the mount, if any: a
	// blocking wait tells it first (HoldEntry).
	ring atomic.Pointer[uring.Transport]
}

// flockState is one name's lock: one exclusive holder or shared ones.
type flockState struct {
	excl    uint64
	hasExcl bool
	shared  map[uint64]struct{}
	changed chan struct{} // closed when a holder leaves
}

func (l *flockState) empty() bool { return !l.hasExcl && len(l.shared) == 0 }

// set takes (syscall.F_RDLCK, F_WRLCK) owner's lock on name, or drops
// (F_UNLCK) the owner's locks. A lock held by another owner is
// errFlockBusy, or with wait is waited for until ctx ends
// (errFlockInterrupted).
func (t *flockTable) set(ctx context.Context, name string, owner uint64, typ uint32, wait bool) error {
	var held func() // the transport's entry, held by the wait
	defer func() {
		if held != nil {
			held()
		}
	}()
	for {
		t.mu.Lock()
		if typ == syscall.F_UNLCK {
			// An open file locks its one file only, which a rename may
			// have given another name since: all of the owner's go.
			t.releaseLocked(owner)
			t.mu.Unlock()
			return nil
		}
		l := t.lockLocked(name)
		if t.grantLocked(l, name, owner, typ == syscall.F_WRLCK) {
			t.mu.Unlock()
			return nil
		}
		if !wait {
			t.tidyLocked(name, l)
			t.mu.Unlock()
			return errFlockBusy
		}
		ch := l.changed
		t.mu.Unlock()
		if r := t.ring.Load(); r != nil && held == nil {
			var err error
			if held, err = r.HoldEntry(callerProc(ctx).Uid); err != nil {
				t.mu.Lock()
				t.tidyLocked(name, t.locks[name])
				t.mu.Unlock()
				return fmt.Errorf("%w: %w", errFlockNoEntry, err)
			}
			continue // the lock may have gone meanwhile
		}
		select {
		case <-ch:
		case <-ctx.Done():
			t.mu.Lock()
			t.tidyLocked(name, t.locks[name])
			t.mu.Unlock()
			return errFlockInterrupted
		}
	}
}

// lockLocked returns name's lock, made if need be (under t.mu).
func (t *flockTable) lockLocked(name string) *flockState {
	if t.locks == nil {
		t.locks = make(map[string]*flockState)
		t.owners = make(map[uint64]map[string]struct{})
	}
	l := t.locks[name]
	if l == nil {
		l = &flockState{shared: make(map[uint64]struct{}), changed: make(chan struct{})}
		t.locks[name] = l
	}
	return l
}

// grantLocked gives owner the lock l of name, exclusive or shared, if no
// other owner's lock conflicts (under t.mu).
func (t *flockTable) grantLocked(l *flockState, name string, owner uint64, excl bool) bool {
	if l.hasExcl && l.excl != owner {
		return false
	}
	if excl {
		for o := range l.shared {
			if o != owner {
				return false
			}
		}
		delete(l.shared, owner)
		l.excl, l.hasExcl = owner, true
	} else {
		if l.hasExcl {
			l.hasExcl = false // owner's own exclusive lock, made shared
			l.wake()
		}
		l.shared[owner] = struct{}{}
	}
	names := t.owners[owner]
	if names == nil {
		names = make(map[string]struct{})
		t.owners[owner] = names
	}
	names[name] = struct{}{}
	return true
}

// dropLocked drops owner's lock on name (under t.mu).
func (t *flockTable) dropLocked(name string, owner uint64) {
	l := t.locks[name]
	if l == nil {
		return
	}
	if l.hasExcl && l.excl == owner {
		l.hasExcl = false
	}
	delete(l.shared, owner)
	if names := t.owners[owner]; names != nil {
		delete(names, name)
		if len(names) == 0 {
			delete(t.owners, owner)
		}
	}
	l.wake()
	t.tidyLocked(name, l)
}

// wake tells the waiters of l that a holder left.
func (l *flockState) wake() {
	close(l.changed)
	l.changed = make(chan struct{})
}

// tidyLocked forgets name's lock once nobody holds it (a waiter makes it
// again).
func (t *flockTable) tidyLocked(name string, l *flockState) {
	if l != nil && l.empty() && t.locks[name] == l {
		delete(t.locks, name)
	}
}

// release drops every lock owner holds: its open file is closed.
func (t *flockTable) release(owner uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.releaseLocked(owner)
}

// releaseLocked is release under t.mu.
func (t *flockTable) releaseLocked(owner uint64) {
	for name := range t.owners[owner] {
		t.dropLocked(name, owner)
	}
}

// flockName is the lock name of a file: its key, which every version of
// a files model's file and every file being written under its name share.
func flockName(key format.Key) string { return "file\x00" + key.String() }

// flock answers a lock request on an open file of key: flock locks from
// the table, anything else (a POSIX lock, which the mount does not claim)
// ENOTSUP.
func (s *fsState) flock(ctx context.Context, key format.Key, owner uint64, lk *fuse.FileLock, flags uint32, wait bool) syscall.Errno {
	if flags&fuse.FUSE_LK_FLOCK == 0 {
		return errnoNoLock
	}
	return s.flockSet(ctx, flockName(key), owner, lk.Typ, wait)
}

// flockSet takes or drops owner's flock lock on name (flockTable.set),
// and logs a wait the transport had no room for.
func (s *fsState) flockSet(ctx context.Context, name string, owner uint64, typ uint32, wait bool) syscall.Errno {
	err := s.flocks.set(ctx, name, owner, typ, wait)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errFlockNoEntry):
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

// Setlk and Setlkw of a descriptor of a file being written (flock).
func (h *writeHandle) Setlk(ctx context.Context, owner uint64, lk *fuse.FileLock, flags uint32) syscall.Errno {
	return h.s.flock(ctx, h.d.Draft().Key(), owner, lk, flags, false)
}
func (h *writeHandle) Setlkw(ctx context.Context, owner uint64, lk *fuse.FileLock, flags uint32) syscall.Errno {
	return h.s.flock(ctx, h.d.Draft().Key(), owner, lk, flags, true)
}
