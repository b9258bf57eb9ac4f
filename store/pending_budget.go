package store

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"
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
//   - what counts is each file's charge: at least a page (what the tmpfs
//     spends on an empty file), raised to the end of every write the
//     daemon admits (without passthrough) and to what the file holds in
//     memory (its allocated blocks, fstat) when the file is closed or the
//     budget refreshes (refreshPending, every second while passthrough
//     writes run, which the daemon does not see; and at a create, those of
//     the creating user). The totals, in all and per user, are kept as the
//     charges change, so admitting a write is O(1), whatever the number of
//     files being written, and a create costs its user's own files;
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
	files map[*Draft]*pendingCharge // the files being written
	users map[uint32]*pendingUse    // the charges' sums, by writer's uid
	total int64                     // the sum of every charge
}

// pendingCharge is one file being written: its writer and what it counts.
type pendingCharge struct {
	uid     uint32
	charged int64
}

// pendingUse is one user's files being written and their charges' sum.
type pendingUse struct {
	bytes  int64
	drafts map[*Draft]struct{}
}

// pendingFile registers f, a file uid is writing; pendingDone ends it.
func (s *Store) pendingFile(f *Draft, uid uint32) {
	b := &s.budget
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.files == nil {
		b.files = make(map[*Draft]*pendingCharge)
		b.users = make(map[uint32]*pendingUse)
	}
	if b.files[f] != nil {
		return
	}
	b.files[f] = &pendingCharge{uid: uid}
	u := b.users[uid]
	if u == nil {
		u = &pendingUse{drafts: make(map[*Draft]struct{})}
		b.users[uid] = u
	}
	u.drafts[f] = struct{}{}
	b.chargeLocked(b.files[f], pageCharge)
}

// pendingDone forgets f (published or discarded).
func (s *Store) pendingDone(f *Draft) {
	b := &s.budget
	b.mu.Lock()
	defer b.mu.Unlock()
	c := b.files[f]
	if c == nil {
		return
	}
	b.chargeLocked(c, 0)
	delete(b.files, f)
	u := b.users[c.uid]
	if delete(u.drafts, f); len(u.drafts) == 0 {
		delete(b.users, c.uid)
	}
}

// chargeLocked sets c's charge to n, keeping the sums (under mu).
func (b *pendingBudget) chargeLocked(c *pendingCharge, n int64) {
	d := n - c.charged
	c.charged = n
	b.total += d
	b.users[c.uid].bytes += d
}

// pendingSize sets w's charge to what its file holds now (fstat), under
// w.mu: at its writer's close, which the daemon sees with passthrough
// too, and at each refresh. A parked file keeps its charge (nothing
// writes it).
func (s *Store) pendingSize(w *Draft) {
	if w.f == nil {
		return
	}
	n, ok := heldBytes(w.f)
	if !ok {
		return
	}
	b := &s.budget
	b.mu.Lock()
	defer b.mu.Unlock()
	if c := b.files[w]; c != nil {
		b.chargeLocked(c, n)
	}
}

// heldBytes is what f holds in memory: its allocated blocks or its size,
// at least a page; ok is false when f is closed.
func heldBytes(f *os.File) (n int64, ok bool) {
	var st syscall.Stat_t
	if syscall.Fstat(int(f.Fd()), &st) != nil {
		return 0, false
	}
	return max(st.Blocks*512, st.Size, pageCharge), true
}

// refreshPending sets the charge of up to refreshBatch files being
// written (Go's map order picks them at random) to what each holds now:
// the writes passthrough made, which the daemon does not see. It runs in
// the background (refreshLoop), not on any request's path.
func (s *Store) refreshPending() {
	b := &s.budget
	b.mu.Lock()
	drafts := make([]*Draft, 0, min(len(b.files), refreshBatch))
	for w := range b.files {
		if len(drafts) == refreshBatch {
			break
		}
		drafts = append(drafts, w)
	}
	b.mu.Unlock()
	s.refreshDrafts(drafts)
	s.markFullWrites(drafts)
}

// refreshUser is refreshPending for the files uid is writing, all of
// them: at uid's create, so that what passthrough wrote for uid counts
// against its share. It costs that user's files, not everyone's.
func (s *Store) refreshUser(uid uint32) {
	b := &s.budget
	b.mu.Lock()
	var drafts []*Draft
	if u := b.users[uid]; u != nil {
		drafts = make([]*Draft, 0, len(u.drafts))
		for w := range u.drafts {
			drafts = append(drafts, w)
		}
	}
	b.mu.Unlock()
	s.refreshDrafts(drafts)
}

// refreshDrafts sets each draft's charge to what its file holds now
// (taking each draft's lock, then the budget's: the order of writes).
func (s *Store) refreshDrafts(drafts []*Draft) {
	for _, w := range drafts {
		w.mu.RLock()
		s.pendingSize(w)
		w.mu.RUnlock()
	}
}

// refreshBatch is how many files one refresh looks at: a second's refresh
// costs at most that many fstat calls.
const refreshBatch = 4096

// refreshLoop refreshes the charges every second until stop closes, and
// every leftRetryEvery seconds tries to drop the directory move records
// left (files_move_left.go).
func (s *Store) refreshLoop(stop <-chan struct{}) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for tick := 1; ; tick++ {
		select {
		case <-stop:
			return
		case <-t.C:
			s.refreshPending()
			if tick%leftRetryEvery == 0 {
				_ = s.retryLeftMoves() // logged by the settings write
			}
		}
	}
}

// admitPending checks that uid may add grow bytes to the data being
// written, and with create one more file: ErrPendingFull past the mount's
// budget, ErrQuota past the user's share.
func (s *Store) admitPending(uid uint32, grow int64, create bool) error {
	return s.admitWrite(nil, 0, uid, grow, create)
}

// admitWrite is admitPending for a write of f up to end: grow is what
// end passes f's charge by, and an admitted write raises the charge to
// end at once, before the write.
func (s *Store) admitWrite(f *Draft, end int64, uid uint32, grow int64, create bool) error {
	b := &s.budget
	if b.max <= 0 {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.fileLimits()
	var mine int64
	var mineFiles int
	if u := b.users[uid]; u != nil {
		mine, mineFiles = u.bytes, len(u.drafts)
	}
	c := b.files[f]
	if c != nil {
		grow = max(end-c.charged, 0)
	}
	// The whole budget first: past it the store has no room (ENOSPC), past
	// a share only the user's is used up (EDQUOT).
	if create && len(b.files) >= b.maxFiles {
		return fmt.Errorf("%d files being written, the most is %d: %w", len(b.files), b.maxFiles, ErrPendingFull)
	}
	if b.total+grow > b.max {
		return fmt.Errorf("%d bytes being written, the budget is %d: %w", b.total, b.max, ErrPendingFull)
	}
	if create && mineFiles >= b.perUserFiles {
		return fmt.Errorf("uid %d writes %d files not yet published, its share is %d: %w", uid, mineFiles, b.perUserFiles, ErrQuota)
	}
	if b.perUser > 0 && mine+grow > b.perUser {
		return fmt.Errorf("uid %d writes %d bytes not yet published, its share is %d: %w", uid, mine, b.perUser, ErrQuota)
	}
	if c != nil && grow > 0 {
		b.chargeLocked(c, end)
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
