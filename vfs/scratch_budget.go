package vfs

import (
	"fmt"
	"sync"

	"github.com/ucmfs/ucmfs/store"
	"golang.org/x/sys/unix"
)

// The private entries of ucm-posix models (fs/scratch/dir.go) live in the
// memory tier's tmpfs, which the blocks need, and any user who may write
// in a model may make them: 585 files of 1 MiB by another user filled it,
// and every user's writes failed with ENOSPC. So what they take is
// bounded, as the files being written are (store's pending budget):
//
//   - maxScratch bytes in all and MaxScratchPerUser for one user's, root
//     included; an entry counts what it allocates, and at least
//     ScratchEntry (an empty file or a directory costs the tmpfs an inode);
//   - each entry is charged to the user who made it, by its inode number
//     in the tmpfs; a growth (a write past the end, fallocate, a truncate
//     up, a new entry) is admitted before it is made (EDQUOT past the
//     user's share, ENOSPC past the bound) and the charge is set to what
//     the entry allocates after it;
//   - an entry's charge goes when its last name does (unlink, rmdir, a
//     rename over it) or, for a file still open then, at its last close.
//
// UCM's GC keeps a few small files here (a lease directory, heartbeats,
// a config): the bounds are far above what it needs. The tmpfs is new at
// each mount, and so is the budget.

const (
	maxScratch        = 16 << 20       // bytes of private entries, every model together
	MaxScratchPerUser = maxScratch / 2 // what one user's entries may take of them
	ScratchEntry      = 4096           // what an entry counts at least
)

// scratchCharge is what one entry is charged, and to whom.
type scratchCharge struct {
	uid   uint32
	bytes int64
}

// ScratchBudget counts what the private entries take, by user.
type ScratchBudget struct {
	mu      sync.Mutex
	total   int64
	users   map[uint32]int64
	charges map[uint64]scratchCharge // by the entry's inode number in the tmpfs
	open    map[uint64]int           // descriptors the daemon holds open, by inode number
}

// Owner is the user the entry ino is charged to, or uid for an entry
// with no charge yet.
func (b *ScratchBudget) Owner(ino uint64, uid uint32) uint32 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if c, ok := b.charges[ino]; ok {
		return c.uid
	}
	return uid
}

// Reserve admits n more bytes for uid and counts them, or fails:
// ErrQuota past uid's share, ErrNoSpace past the bound.
func (b *ScratchBudget) Reserve(uid uint32, n int64) error {
	if n <= 0 {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.users == nil {
		b.users = make(map[uint32]int64)
		b.charges = make(map[uint64]scratchCharge)
	}
	switch {
	case b.users[uid]+n > MaxScratchPerUser:
		return fmt.Errorf("uid %d's private entries take %d bytes, its share of %d: %w", uid, b.users[uid], MaxScratchPerUser, store.ErrQuota)
	case b.total+n > maxScratch:
		return fmt.Errorf("private entries take %d bytes, the bound of %d: %w", b.total, maxScratch, store.ErrNoSpace)
	}
	b.users[uid] += n
	b.total += n
	return nil
}

// Settle charges the entry ino to uid for the bytes it allocates now
// (alloc), in place of its charge so far and of the reserved bytes
// admitted for the change (reserve); alloc < 0: the change was not made,
// the reservation goes and the charge stays.
func (b *ScratchBudget) Settle(ino uint64, uid uint32, alloc, reserved int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.add(uid, -reserved)
	if alloc < 0 {
		return
	}
	if b.charges == nil {
		b.charges = make(map[uint64]scratchCharge)
	}
	bytes := max(alloc, ScratchEntry)
	if old, ok := b.charges[ino]; ok {
		b.add(old.uid, -old.bytes)
	}
	b.charges[ino] = scratchCharge{uid: uid, bytes: bytes}
	b.add(uid, bytes)
}

// release takes the charge of the entry ino out: its last name is gone,
// and no descriptor holds it.
func (b *ScratchBudget) release(ino uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if c, ok := b.charges[ino]; ok {
		b.add(c.uid, -c.bytes)
		delete(b.charges, ino)
	}
}

// add moves uid's sum and the total by n; under b.mu.
func (b *ScratchBudget) add(uid uint32, n int64) {
	if b.users == nil {
		b.users = make(map[uint32]int64)
	}
	b.total += n
	if b.users[uid] += n; b.users[uid] <= 0 {
		delete(b.users, uid)
	}
}

// Gone releases the entry st described before a removal or a rename over
// it took a name of it: a directory, or a file with no other name. A file
// still open keeps its charge until its last close (Closed): the tmpfs
// keeps its bytes until then.
func (b *ScratchBudget) Gone(st *unix.Stat_t) {
	if st.Mode&unix.S_IFMT != unix.S_IFDIR && st.Nlink > 1 {
		return
	}
	b.mu.Lock()
	open := b.open[st.Ino] > 0
	b.mu.Unlock()
	if !open {
		b.release(st.Ino)
	}
}

// Opened counts a descriptor of the entry ino.
func (b *ScratchBudget) Opened(ino uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.open == nil {
		b.open = make(map[uint64]int)
	}
	b.open[ino]++
}

// Closed takes a descriptor of the entry ino out, and its charge with the
// last one when the file has no name left (nlink 0).
func (b *ScratchBudget) Closed(ino uint64, nlink uint32) {
	b.mu.Lock()
	if b.open[ino]--; b.open[ino] <= 0 {
		delete(b.open, ino)
	} else {
		nlink = 1 // another descriptor holds it
	}
	b.mu.Unlock()
	if nlink == 0 {
		b.release(ino)
	}
}

// AdmitPath admits a new entry at path p for uid: the bytes reserved
// for it, none when p exists (an open of it), or the budget's error.
func (b *ScratchBudget) AdmitPath(uid uint32, p string) (int64, error) {
	var st unix.Stat_t
	if unix.Lstat(p, &st) == nil {
		return 0, nil
	}
	if err := b.Reserve(uid, ScratchEntry); err != nil {
		return 0, err
	}
	return ScratchEntry, nil
}

// SettlePath settles the charge of the entry at path p after a change
// for which reserved bytes were admitted to uid (made: the change was
// made).
func (b *ScratchBudget) SettlePath(p string, uid uint32, reserved int64, made bool) {
	var st unix.Stat_t
	if !made || unix.Lstat(p, &st) != nil {
		b.Settle(0, uid, -1, reserved)
		return
	}
	b.Settle(st.Ino, b.Owner(st.Ino, uid), st.Blocks*512, reserved)
}

// Removing is called before a removal or a rename takes the name at path
// p; gone, called once it did, releases the charge of what p named if
// that was its last name.
func (b *ScratchBudget) Removing(p string) (gone func()) {
	var st unix.Stat_t
	if unix.Lstat(p, &st) != nil {
		return func() {}
	}
	return func() { b.Gone(&st) }
}

// Pages rounds n bytes up to whole pages: what the tmpfs may allocate
// for them.
func Pages(n int64) int64 {
	return (max(n, 0) + ScratchEntry - 1) / ScratchEntry * ScratchEntry
}
