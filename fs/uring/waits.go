package uring

import (
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sys/unix"
)

// Handlers that wait for another request.
//
// A ring entry serves one request at a time, on its own thread, and the
// kernel hands a CPU's requests to the entries of that CPU's queue only.
// A handler that waits for another request to arrive (a blocking flock
// waits for its holder's unlock) holds its entry all that time: with as
// many waiters on one CPU as its queue has entries, the request they wait
// for finds no entry, and nothing moves again (measured: four flock
// waiters on CPU 0 and the holder's unlock from CPU 0).
//
// So such a handler calls Transport.HoldEntry first. On a ring entry's thread
// it counts the wait against the entry's queue and, when fewer than
// Threads entries of the queue are left to serve, registers one more for
// the queue before it returns. Then it wakes the queue: the kernel gives
// a newly registered entry only requests made after it (a request queued
// while every entry was busy goes to the next entry that commits), so
// the handler makes one request of its own from the queue's CPU, which
// the free entry serves and then fetches whatever was queued. An entry
// once registered stays until the connection ends. A user has at most
// MaxWaits waits on one queue, and one more is refused (ErrTooManyWaits):
// so the entries (threads and buffers) are bounded, and one user's waits
// never take the room of another's.

// MaxWaits is the most handlers of one user that wait on one CPU queue at
// once (Transport.HoldEntry).
const MaxWaits = 30

// ErrTooManyWaits: MaxWaits requests of the user on this CPU already wait
// for others.
var ErrTooManyWaits = errors.New("too many of this user's requests on this CPU wait for others")

// wakeName is the extended attribute the daemon asks its own mount's root
// for, to make a request on a queue's CPU (the answer, ENODATA, is not
// used).
const wakeName = "user.ucm.wake"

// queueState counts a CPU queue's entries and the handlers on them that
// wait for other requests.
type queueState struct {
	mu      sync.Mutex
	entries int
	waiting int
	byUser  map[uint32]int // waiting, by user id
}

// HoldEntry is called by a handler of user uid's request before it waits
// for another request to arrive. On a thread that serves a ring entry it
// makes sure that the entry's queue keeps Threads entries free of such
// waits (registering one more if need be) and that no request is left
// queued behind them; it returns the function to call once the wait is
// over. On any other thread (the /dev/fuse loop, which starts a reader
// whenever all are busy) it does nothing.
func (t *Transport) HoldEntry(uid uint32) (done func(), err error) {
	v, ok := t.threads.Load(unix.Gettid())
	if !ok {
		return func() {}, nil
	}
	qid := v.(int)
	q := &t.queues[qid]
	q.mu.Lock()
	if q.byUser[uid] >= MaxWaits {
		q.mu.Unlock()
		return nil, ErrTooManyWaits
	}
	if q.entries-q.waiting <= t.base {
		if err := t.addEntry(qid); err != nil {
			q.mu.Unlock()
			return nil, fmt.Errorf("one more ring entry for queue %d: %w", qid, err)
		}
		q.entries++
	}
	q.waiting++
	if q.byUser == nil {
		q.byUser = map[uint32]int{}
	}
	q.byUser[uid]++
	q.mu.Unlock()
	// This thread runs on the queue's CPU: the request goes to its queue.
	_, _ = unix.Getxattr(t.mnt, wakeName, nil)
	return func() {
		q.mu.Lock()
		q.waiting--
		if q.byUser[uid]--; q.byUser[uid] == 0 {
			delete(q.byUser, uid)
		}
		q.mu.Unlock()
	}, nil
}

// addEntry registers one more entry for queue qid, served by a thread of
// its own, and returns once the kernel took it.
func (t *Transport) addEntry(qid int) error {
	e, err := newEntry(qid, t.payload, t.log)
	if err != nil {
		return err
	}
	registered := make(chan error, 1)
	t.start(e, registered)
	return <-registered
}

// start serves e on a thread of its own, which registers it and says so
// on registered.
func (t *Transport) start(e *entry, registered chan<- error) {
	t.serving.Add(1)
	go func() {
		defer t.serving.Done()
		e.serve(t.fd, t.ps, registered, &t.threads)
	}()
}
