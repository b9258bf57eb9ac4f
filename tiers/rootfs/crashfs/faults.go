package crashfs

import (
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Fault is what a Faults hook does to the operations it matches: wait
// Delay (a slow disk, a network round trip), then hold the operation
// until Clear with Stall, or fail it with Errno. An operation held and
// released by Clear goes on as if there had been no fault; one in its
// Delay when the fault is cleared still fails with Errno.
type Fault struct {
	// Match chooses the operations by name and path, as the hook is
	// given them (Wrap); nil matches every operation.
	Match func(op, rel string) bool
	Delay time.Duration
	Stall bool
	Errno unix.Errno
}

// Faults is a hook (Before: for Wrap, OpenWrapped, Disk.SetFault) whose
// fault a test sets and clears while a tier runs on it, as a disk fails
// and recovers under a running daemon: a full filesystem, a failing
// one, a hung one. It counts every operation by name, and the ones its
// fault matched. Unlike a Gate, it can fail as well as hold, and be set
// again after a Clear. It is safe for concurrent use.
type Faults struct {
	mu      sync.Mutex
	fault   *Fault
	release chan struct{} // closed by Clear: the held operations go on
	calls   map[string]int64
	hits    atomic.Int64
}

// NewFaults returns a Faults hook with no fault set.
func NewFaults() *Faults {
	return &Faults{release: make(chan struct{}), calls: map[string]int64{}}
}

// Set makes fl the fault, from now until Clear.
func (f *Faults) Set(fl Fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fault = &fl
}

// Clear removes the fault and lets the operations it holds go on.
func (f *Faults) Clear() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fault = nil
	close(f.release)
	f.release = make(chan struct{})
}

// Calls is how many operations named one of ops have passed the hook,
// faulted or not.
func (f *Faults) Calls(ops ...string) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	var n int64
	for _, op := range ops {
		n += f.calls[op]
	}
	return n
}

// Hits is how many operations a fault has matched.
func (f *Faults) Hits() int64 {
	return f.hits.Load()
}

// Before is the hook: it counts the operation and applies the fault if
// it matches.
func (f *Faults) Before(op, rel string) error {
	f.mu.Lock()
	f.calls[op]++
	fl, release := f.fault, f.release
	f.mu.Unlock()
	if fl == nil || fl.Match != nil && !fl.Match(op, rel) {
		return nil
	}
	f.hits.Add(1)
	if fl.Delay > 0 {
		time.Sleep(fl.Delay)
	}
	if fl.Stall {
		<-release
		return nil
	}
	if fl.Errno != 0 {
		return &os.PathError{Op: op, Path: rel, Err: fl.Errno}
	}
	return nil
}
