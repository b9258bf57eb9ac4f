package mem

import (
	"sync"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/tiers/index"
)

// Late drops: a user's removal (Stack.Delete: an unlink, a rename over)
// takes a file out of the memory tier's index at once and leaves the
// release of its tmpfs file and mapping (an unlink, an munmap, a GPU host
// unregistration: 30-40 µs of a 4 KiB page's removal here) to a worker,
// so the removal answers sooner. Nothing of it is persistent: a daemon
// that dies with drops pending loses its whole tmpfs anyway.
//
// The file stays at its path until the worker (or settle) unlinks it, so
// whatever puts a file at that path again settles the key first: the
// tier's publish, RemoveDir and RemoveModel (SettleAll), Close; and a
// publish whose directories meet a file there (a File d/a removed, then
// d/a/b published) settles them all and makes them again. The
// worker unlinks by path, so it must never run while a new file of the
// same key is published: settle waits for the worker's drop in flight.
//
// The drops waiting are bounded (lateMaxFiles, lateMaxBytes); past the
// bound a removal drops in line. The private tmpfs is sized with room for
// them (tmpfsSize).

// The bounds of the drops waiting.
const (
	lateMaxFiles = 1024
	lateMaxBytes = 32 << 20
)

// lateDrops are the memory tier's removed files not yet released.
type lateDrops struct {
	run sync.Mutex // held by whoever releases files (the worker, settle)

	mu       sync.Mutex // guards what follows; never held while releasing
	pending  map[format.Key]*index.Entry
	bytes    int64
	inflight *index.Entry // the worker's release in progress
	stopped  bool

	wake chan struct{} // 1-buffered: work is pending
	done chan struct{} // closed when the worker returns
}

// startLate starts the worker releasing t's late drops.
func (t *Tier) startLate() {
	t.late = &lateDrops{
		pending: make(map[format.Key]*index.Entry),
		wake:    make(chan struct{}, 1),
		done:    make(chan struct{}),
	}
	go t.lateLoop()
}

// RemoveLate is Remove for a user's removal: the file leaves the index at
// once; its release is left to the worker while fewer than the bound
// wait, done in line otherwise.
func (t *Tier) RemoveLate(key format.Key) error { return t.remove(key, true) }

// pageCharge is what a tmpfs file of size bytes takes: whole pages.
func pageCharge(size int64) int64 { return (size + 4095) &^ 4095 }

// add queues e's release; false when the queue is full or stopped.
func (l *lateDrops) add(e *index.Entry) bool {
	size := pageCharge(e.Size)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped || len(l.pending) >= lateMaxFiles || l.bytes+size > lateMaxBytes {
		return false
	}
	if _, dup := l.pending[e.Key()]; dup { // a publish settles its key first: cannot be
		return false
	}
	l.pending[e.Key()] = e
	l.bytes += size
	select { // under mu: stopLate closes wake under it
	case l.wake <- struct{}{}:
	default:
	}
	return true
}

// take removes and returns one pending entry (key's when key is set), or
// nil; the caller holds run.
func (l *lateDrops) take(key *format.Key) *index.Entry {
	l.mu.Lock()
	defer l.mu.Unlock()
	var e *index.Entry
	if key != nil {
		e = l.pending[*key]
	} else {
		for _, p := range l.pending {
			e = p
			break
		}
	}
	if e != nil {
		delete(l.pending, e.Key())
		l.bytes -= pageCharge(e.Size)
		l.inflight = e
	}
	return e
}

// finish clears the release in flight.
func (l *lateDrops) finish() {
	l.mu.Lock()
	l.inflight = nil
	l.mu.Unlock()
}

// busy reports whether key's file waits for its release or is being
// released.
func (l *lateDrops) busy(key format.Key) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.pending) == 0 && l.inflight == nil {
		return false
	}
	_, ok := l.pending[key]
	return ok || (l.inflight != nil && l.inflight.Key() == key)
}

// release drops one entry taken from the queue.
func (t *Tier) release(key *format.Key) bool {
	l := t.late
	l.run.Lock()
	defer l.run.Unlock()
	e := l.take(key)
	if e == nil {
		return false
	}
	if err := t.drop(e); err != nil {
		t.log.Warn("memory tier: release of a removed file failed", "key", e.Key().String(), "err", err)
	}
	l.finish()
	return true
}

// settle releases key's file now if it waits, and waits for the worker's
// release of it in flight: key's path is then free for a new file.
func (t *Tier) settle(key format.Key) {
	if !t.late.busy(key) {
		return
	}
	t.release(&key) // waits on run for a release in flight
}

// SettleAll releases every file waiting.
func (t *Tier) SettleAll() {
	for t.release(nil) {
	}
	t.late.run.Lock() // a release in flight finishes
	t.late.run.Unlock()
}

// lateLoop is the worker: it releases what is queued until stopLate.
func (t *Tier) lateLoop() {
	l := t.late
	defer close(l.done)
	for range l.wake {
		for t.release(nil) {
		}
	}
}

// stopLate stops the worker and releases what still waits.
func (t *Tier) stopLate() {
	l := t.late
	l.mu.Lock()
	if l.stopped {
		l.mu.Unlock()
		return
	}
	l.stopped = true
	close(l.wake)
	l.mu.Unlock()
	<-l.done
	t.SettleAll()
}
