package store

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
)

// ErrPendingFull: the data being written (files not yet published) has
// reached the mount's budget for it (ENOSPC).
var ErrPendingFull = errors.New("too much data being written")

// Files being written are temp files of the memory tier (RAM) that no
// budget of the tier counted: six open files of 200 MiB each took 1.2 GiB
// of a mount whose memory tier is 64 MiB. The pending budget bounds them:
//
//   - MaxPending bytes in all (default: the memory tier's capacity), and
//     MaxPendingPerUser for the files of one user (default: half of it,
//     so that no user alone takes it all);
//   - what counts is what the files hold in memory now (their allocated
//     blocks, fstat), summed when a file is created or the daemon writes
//     into one (without passthrough);
//   - past the budget, creating a file or writing into one fails with
//     ErrPendingFull (ENOSPC), past a user's share with ErrQuota (EDQUOT).
//     Nothing published is touched: the refusal is the writer's.
//
// With passthrough the kernel writes the files directly, so the daemon
// sees no write: a file is checked when it is created, and the memory
// tier's private tmpfs is sized to its capacity plus MaxPending, so the
// kernel itself fails a write past that with ENOSPC (tiers.MemConfig).

// Each file being written also holds a descriptor of the daemon, so their
// number is bounded too: maxFiles in all (half the daemon's descriptor
// limit) and a quarter of that for one user; past it a create fails with
// ErrPendingFull (ENOSPC) or, for the user's share, ErrQuota (EDQUOT), and
// the daemon keeps the descriptors it needs for everything else (a flush,
// an unmount, root's own writes). An empty file counts as a page: that is
// what the tmpfs spends on it at least.

// pendingBudget tracks the files being written, by user.
type pendingBudget struct {
	max, perUser int64
	// maxFiles and perUserFiles bound how many files are being written,
	// in all and by one user (0: set from the descriptor limit on first
	// use).
	maxFiles, perUserFiles int

	mu    sync.Mutex
	files map[*os.File]uint32 // open temp files and their writers' uid
}

// pendingFile registers f, a file uid is writing; PendingDone ends it.
func (s *Store) pendingFile(f *os.File, uid uint32) {
	b := &s.budget
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.files == nil {
		b.files = make(map[*os.File]uint32)
	}
	b.files[f] = uid
}

// pendingDone forgets f (published or discarded).
func (s *Store) pendingDone(f *os.File) {
	b := &s.budget
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.files, f)
}

// admitPending checks that uid may add grow bytes to the data being
// written, and with create one more file: ErrPendingFull past the mount's
// budget, ErrQuota past the user's share.
func (s *Store) admitPending(uid uint32, grow int64, create bool) error {
	b := &s.budget
	if b.max <= 0 {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.fileLimits()
	var total, mine int64
	var mineFiles int
	for f, owner := range b.files {
		var st syscall.Stat_t
		if syscall.Fstat(int(f.Fd()), &st) != nil {
			continue // closed meanwhile
		}
		n := max(st.Blocks*512, st.Size, pageCharge)
		total += n
		if owner == uid {
			mine += n
			mineFiles++
		}
	}
	// The whole budget first: past it the store has no room (ENOSPC), past
	// a share only the user's is used up (EDQUOT).
	if create && len(b.files) >= b.maxFiles {
		return fmt.Errorf("%d files being written, the most is %d: %w", len(b.files), b.maxFiles, ErrPendingFull)
	}
	if total+grow > b.max {
		return fmt.Errorf("%d bytes being written, the budget is %d: %w", total, b.max, ErrPendingFull)
	}
	if create && mineFiles >= b.perUserFiles {
		return fmt.Errorf("uid %d writes %d files not yet published, its share is %d: %w", uid, mineFiles, b.perUserFiles, ErrQuota)
	}
	if b.perUser > 0 && mine+grow > b.perUser {
		return fmt.Errorf("uid %d writes %d bytes not yet published, its share is %d: %w", uid, mine, b.perUser, ErrQuota)
	}
	return nil
}

// pageCharge is the least a file being written counts for.
const pageCharge = 4096

// fileLimits sets maxFiles and perUserFiles from the daemon's descriptor
// limit when they are not set (under mu).
func (b *pendingBudget) fileLimits() {
	if b.maxFiles > 0 {
		return
	}
	b.maxFiles = 4096
	var rl syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl) == nil && rl.Cur > 0 {
		b.maxFiles = int(min(rl.Cur/2, 1<<20))
	}
	b.perUserFiles = max(b.maxFiles/4, 16)
}
