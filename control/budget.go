package control

import (
	"errors"
	"fmt"
	"sync"

	"github.com/ucmfs/ucmfs/control/line"
)

// Memory of control requests. What a request makes the daemon hold
// beyond its line (the ids, the query, the answer: all bounded by
// MaxRequest and MaxUnread) is charged here before it is allocated, by
// what it may cost: today the index of a topk request, which a session
// keeps until its next request or its close. A request past
// MaxRequestMemory is refused with line.ErrTooMany (E2BIG); one that
// would take its uid past MaxUserMemory over all its sessions, or every
// user past MaxMemory, with ErrNoMemory (ENOMEM). A session holds one
// index at a time (its previous one is given back before the next is
// charged), so MaxRequestMemory is also what one session may hold.

// Memory limits of control requests.
const (
	// MaxRequestMemory is the most one request (and so one session) may
	// hold: 1 GiB.
	MaxRequestMemory = 1 << 30
	// MaxUserMemory is the most one uid's sessions may hold together:
	// 4 GiB.
	MaxUserMemory = 4 << 30
	// MaxMemory is the most every session of the mount may hold
	// together: 16 GiB.
	MaxMemory = 16 << 30
)

// ErrNoMemory: a request would take its user, or every user together,
// past the memory control sessions may hold (ENOMEM).
var ErrNoMemory = errors.New("control sessions hold too much memory")

// memBudget counts the bytes control sessions hold, per uid and in all.
type memBudget struct {
	mu sync.Mutex
	n  perUID
}

// take charges n bytes to uid, or refuses past a limit.
func (m *memBudget) take(uid uint32, n int64) error {
	if n > MaxRequestMemory {
		return fmt.Errorf("it needs %d bytes, more than the %d one request may hold: %w", n, int64(MaxRequestMemory), line.ErrTooMany)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.n.of(uid)+n > MaxUserMemory:
		return fmt.Errorf("it needs %d bytes, and uid %d's sessions hold %d of the %d they may: %w",
			n, uid, m.n.of(uid), int64(MaxUserMemory), ErrNoMemory)
	case m.n.total+n > MaxMemory:
		return fmt.Errorf("it needs %d bytes, and the mount's sessions hold %d of the %d they may: %w",
			n, m.n.total, int64(MaxMemory), ErrNoMemory)
	}
	m.n.add(uid, n)
	return nil
}

// give gives back n bytes uid took.
func (m *memBudget) give(uid uint32, n int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.n.add(uid, -n)
}
