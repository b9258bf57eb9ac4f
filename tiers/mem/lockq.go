package mem

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"sync"

	"github.com/ucmfs/ucmfs/tiers/index"
)

// Page locking modes of Config.Lock.
const (
	// LockAuto locks pages while swap is active (the default).
	LockAuto = "auto"
	// LockAlways always locks pages.
	LockAlways = "always"
	// LockNever maps pages without locking them.
	LockNever = "never"
)

// swapActive reports whether /proc/swaps lists a swap area. Without
// /proc it answers true: locking is then the safe choice.
func swapActive() bool {
	data, err := os.ReadFile("/proc/swaps")
	if err != nil {
		return true
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	lines := 0
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) > 0 {
			lines++
		}
	}
	return lines > 1 // a header line, then one line per area
}

// resolveLock turns Config.Lock into whether to mlock, and why.
func resolveLock(mode string) (lock bool, why string, err error) {
	switch mode {
	case "", LockAuto:
		if swapActive() {
			return true, "swap is active: block pages are locked in RAM", nil
		}
		return false, "no swap is active: block pages are mapped but not locked (tmpfs pages leave RAM only for swap, so mlock would keep nothing more in RAM)", nil
	case LockAlways:
		return true, "", nil
	case LockNever:
		return false, "", nil
	}
	return false, "", fmt.Errorf("memory tier: lock mode %q: want %s, %s or %s", mode, LockAuto, LockAlways, LockNever)
}

// lockJob is a committed file whose pages the locking worker maps and
// locks: the entry it was committed as and the writer's descriptor, which
// the worker owns and closes.
type lockJob struct {
	e *index.Entry
	f *os.File
}

// lockQueue feeds the locking worker, which maps and locks committed files
// after their commit returned, so the writer's close does not wait for
// mlock (pageLocker.deferred).
type lockQueue struct {
	mu      sync.Mutex
	cond    *sync.Cond // signalled when jobs arrive, the queue drains, or it stops
	jobs    []lockJob
	busy    bool // the worker is handling a job
	stopped bool
	done    chan struct{} // closed when the worker has returned
}

func newLockQueue() *lockQueue {
	q := &lockQueue{done: make(chan struct{})}
	q.cond = sync.NewCond(&q.mu)
	return q
}

// push queues a job; after stop it closes the job's file instead.
func (q *lockQueue) push(j lockJob) {
	q.mu.Lock()
	if q.stopped {
		q.mu.Unlock()
		j.f.Close()
		return
	}
	q.jobs = append(q.jobs, j)
	q.mu.Unlock()
	q.cond.Broadcast()
}

// next waits for a job; it reports false once stopped.
func (q *lockQueue) next() (lockJob, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.busy = false
	q.cond.Broadcast()
	for len(q.jobs) == 0 && !q.stopped {
		q.cond.Wait()
	}
	if q.stopped {
		return lockJob{}, false
	}
	j := q.jobs[0]
	q.jobs[0] = lockJob{}
	q.jobs = q.jobs[1:]
	q.busy = true
	return j, true
}

// idle waits until every queued job is handled (or the queue stopped).
func (q *lockQueue) idle() {
	q.mu.Lock()
	defer q.mu.Unlock()
	for (len(q.jobs) > 0 || q.busy) && !q.stopped {
		q.cond.Wait()
	}
}

// stop ends the worker, waits for it, and closes the files of the jobs
// left. Stopping twice is harmless.
func (q *lockQueue) stop() {
	q.mu.Lock()
	q.stopped = true
	left := q.jobs
	q.jobs = nil
	q.mu.Unlock()
	q.cond.Broadcast()
	<-q.done
	for _, j := range left {
		j.f.Close()
	}
}

// lockLoop is the locking worker: for each job it maps and locks the file
// and attaches the mapping to its entry, unless the entry left the index
// meanwhile (removed, evicted) or the tier closed.
func (t *Tier) lockLoop(q *lockQueue) {
	defer close(q.done)
	for {
		j, ok := q.next()
		if !ok {
			return
		}
		t.lockOne(j)
	}
}

func (t *Tier) lockOne(j lockJob) {
	defer j.f.Close()
	if err := t.enter(); err != nil {
		return
	}
	defer t.life.RUnlock()
	if !t.idx.Holds(j.e) {
		return
	}
	b := t.pages.lock(int(j.f.Fd()), j.e.Size)
	if b != nil && !t.idx.Attach(j.e, b) {
		t.pages.unlock(b)
	}
}
