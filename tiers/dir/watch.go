package dir

import (
	"sync"
	"time"
)

// opWatch records the inline operations of a directory tier that are
// waiting for the directory, so that one watchdog (Tier.checkStalls)
// can tell a stalled directory without a goroutine and a timer per
// operation.
type opWatch struct {
	mu   sync.Mutex
	next uint64
	ops  map[uint64]watchedOp
}

// watchedOp is one operation in flight.
type watchedOp struct {
	name  string
	start time.Time
}

// begin records an operation starting now and returns its id for end.
func (w *opWatch) begin(name string) uint64 {
	now := time.Now()
	w.mu.Lock()
	if w.ops == nil {
		w.ops = make(map[uint64]watchedOp)
	}
	w.next++
	id := w.next
	w.ops[id] = watchedOp{name: name, start: now}
	w.mu.Unlock()
	return id
}

// end forgets operation id.
func (w *opWatch) end(id uint64) {
	w.mu.Lock()
	delete(w.ops, id)
	w.mu.Unlock()
}

// oldest returns the operation in flight that started first.
func (w *opWatch) oldest() (name string, start time.Time, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, op := range w.ops {
		if !ok || op.start.Before(start) {
			name, start, ok = op.name, op.start, true
		}
	}
	return name, start, ok
}
