package vfs

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"

	"github.com/ucmfs/ucmfs/format"
)

// flock(2) locks, kept by the daemon (the mount claims FLOCK_LOCKS on
// /dev/fuse).
//
// Left to the kernel, a flock lives on an inode. In a files model every
// process that opens a file for writing gets an inode of its own (the new
// version it writes, fs/pending/), so the lock-file idiom, open(O_RDWR |
// O_CREAT) then flock(LOCK_EX), excluded no one: two processes both held
// the lock. The daemon keeps the locks by name instead: a published file,
// its versions being written and a file being written under that name
// share one lock (FlockName), as the one inode of a local disk does. Any
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
// ENOLCK (ErrFlockNoEntry), as the kernel answers when it has no room for
// another lock. go-fuse's /dev/fuse loop starts a reader whenever every
// reader is busy, so waiters there hold up nothing.
//
// The table holds an entry per lock held or waited for, and an owner's
// names: no more than the open files that took a lock.

// Errors of flock, mapped in fs/errno.go.
var (
	// ErrFlockBusy: another open file holds the lock (LOCK_NB).
	ErrFlockBusy = errors.New("the lock is held by another open file")
	// ErrFlockInterrupted: a blocking flock was interrupted.
	ErrFlockInterrupted = errors.New("interrupted while waiting for the lock")
	// ErrFlockNoEntry: the transport has no room for one more waiting
	// request on this CPU (uring.Transport.HoldEntry).
	ErrFlockNoEntry = errors.New("no room for one more waiting lock request")
)

// Flocks holds the flock locks of the mount.
type Flocks struct {
	mu     sync.Mutex
	locks  map[string]*flockState
	owners map[uint64]map[string]struct{} // the names each owner holds
}

// HoldEntry is what a blocking wait tells the transport first: it holds
// a ring entry of the waiter's queue until done is called
// (uring.Transport.HoldEntry); nil where the transport needs nothing.
type HoldEntry func() (done func(), err error)

// flockState is one name's lock: one exclusive holder or shared ones.
type flockState struct {
	excl    uint64
	hasExcl bool
	shared  map[uint64]struct{}
	changed chan struct{} // closed when a holder leaves
}

func (l *flockState) empty() bool { return !l.hasExcl && len(l.shared) == 0 }

// Set takes (syscall.F_RDLCK, F_WRLCK) owner's lock on name, or drops
// (F_UNLCK) the owner's locks. A lock held by another owner is
// ErrFlockBusy, or with wait is waited for until ctx ends
// (ErrFlockInterrupted); hold is called once before the first wait.
func (t *Flocks) Set(ctx context.Context, name string, owner uint64, typ uint32, wait bool, hold HoldEntry) error {
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
			return ErrFlockBusy
		}
		ch := l.changed
		t.mu.Unlock()
		if hold != nil && held == nil {
			var err error
			if held, err = hold(); err != nil {
				t.mu.Lock()
				t.tidyLocked(name, t.locks[name])
				t.mu.Unlock()
				return fmt.Errorf("%w: %w", ErrFlockNoEntry, err)
			}
			continue // the lock may have gone meanwhile
		}
		select {
		case <-ch:
		case <-ctx.Done():
			t.mu.Lock()
			t.tidyLocked(name, t.locks[name])
			t.mu.Unlock()
			return ErrFlockInterrupted
		}
	}
}

// lockLocked returns name's lock, made if need be (under t.mu).
func (t *Flocks) lockLocked(name string) *flockState {
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
func (t *Flocks) grantLocked(l *flockState, name string, owner uint64, excl bool) bool {
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
func (t *Flocks) dropLocked(name string, owner uint64) {
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
func (t *Flocks) tidyLocked(name string, l *flockState) {
	if l != nil && l.empty() && t.locks[name] == l {
		delete(t.locks, name)
	}
}

// Release drops every lock owner holds: its open file is closed.
func (t *Flocks) Release(owner uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.releaseLocked(owner)
}

// releaseLocked is Release under t.mu.
func (t *Flocks) releaseLocked(owner uint64) {
	for name := range t.owners[owner] {
		t.dropLocked(name, owner)
	}
}

// FlockName is the lock name of a file: its key, which every version of
// a files model's file and every file being written under its name share.
func FlockName(key format.Key) string { return "file\x00" + key.String() }
