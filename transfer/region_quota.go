package transfer

import "sync"

// Regions per user: a session holds at most MaxRegions, and a uid at most
// MaxRegionsPerUser across all its sessions of .ucm/gpu (each region maps
// or imports GPU memory in the daemon, and a uid may open up to
// control.MaxSessionsPerUser sessions). Past either, a register is
// refused with ErrTooManyRegions (EMFILE).

// MaxRegionsPerUser is the most regions one uid may hold in all its
// sessions together.
const MaxRegionsPerUser = 1024

// regionQuota counts the regions each uid holds.
type regionQuota struct {
	mu  sync.Mutex
	per map[uint32]int
}

// take counts one more region of uid, or reports false at the bound.
func (q *regionQuota) take(uid uint32) (held int, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.per == nil {
		q.per = make(map[uint32]int)
	}
	if q.per[uid] >= MaxRegionsPerUser {
		return q.per[uid], false
	}
	q.per[uid]++
	return q.per[uid], true
}

// give counts one region of uid less.
func (q *regionQuota) give(uid uint32) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.per[uid]--; q.per[uid] <= 0 {
		delete(q.per, uid)
	}
}
