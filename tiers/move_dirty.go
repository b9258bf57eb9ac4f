package tiers

import (
	"errors"
	"time"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/tiers/tier"
)

// Dirty blocks and their write-back, paced as the kernel paces its dirty
// pages (dirty_background_bytes, dirty_bytes, dirty_expire_centisecs):
//
//   - A published block is queued for write-back at once, in publish
//     order, but written back only when it is due: when it is older than
//     DirtyExpire, or while the memory tier's dirty bytes are over
//     DirtyBackground (then the oldest first, until they are back under
//     it). A burst of writes below the background threshold therefore
//     runs with no write-back competing for the CPUs and the memory
//     bandwidth; its blocks reach the persistent tier DirtyExpire later.
//   - At DirtyLimit, Publish waits (the writer is slowed, never refused)
//     until write-back brings the dirty bytes back under the limit, so a
//     sustained stream runs at the persistent tier's pace and the rest of
//     the memory tier stays clean, evictable cache.
//   - Nothing else waits for the expiry: a writer waiting for memory room
//     (makeRoom), Flush and FlushAll, write-through and durable publishes,
//     Close, and a stack whose first persistent tier is shared (other
//     daemons read it) write back at once.

// Defaults of the dirty thresholds and age (StackConfig).
const (
	// DefaultDirtyBackgroundPercent of the memory tier may be dirty before
	// write-back starts ahead of the expiry.
	DefaultDirtyBackgroundPercent = 10
	// DefaultDirtyLimitPercent of the memory tier may be dirty before
	// writers wait for write-back.
	DefaultDirtyLimitPercent = 40
	// DefaultDirtyExpire is the age at which a dirty block is written
	// back, for the daemon (StackConfig's zero value writes back at once).
	DefaultDirtyExpire = 3 * time.Second
)

// throttlePoll bounds a throttled writer's wait between checks.
const throttlePoll = 50 * time.Millisecond

// dirtyRef is one queued write-back: the key and when it was queued.
type dirtyRef struct {
	k  format.Key
	at time.Time
}

// setDirtyDefaults fills in the dirty thresholds from the memory tier's
// capacity and turns the deferral off where it must not apply.
func (c *StackConfig) setDirtyDefaults(capacity int64, dirs []tier.Lower) {
	if c.DirtyBackground <= 0 {
		c.DirtyBackground = capacity * DefaultDirtyBackgroundPercent / 100
	}
	if c.DirtyLimit <= 0 {
		c.DirtyLimit = capacity * DefaultDirtyLimitPercent / 100
	}
	c.DirtyLimit = max(c.DirtyLimit, c.DirtyBackground)
	if c.DirtyExpire < 0 || c.WriteThrough || (len(dirs) > 0 && dirs[0].Shared()) {
		c.DirtyExpire = 0 // other daemons read the first tier: publish there at once
	}
}

// DirtyUsage is what the memory tier holds dirty: not yet on a persistent
// tier.
func (s *Stack) DirtyUsage() ModelCount { return ModelCount(s.mem.Index().DirtyTotal()) }

// enqueue schedules a just published key for write-back, and makes its
// writer wait while the dirty bytes are over the limit (throttle). A
// worker is woken only when there is something for it to do: the key is
// due now, or it is the only one queued (a worker then waits for its
// expiry). A burst below the background threshold wakes no worker for
// each block.
func (s *Stack) enqueue(k format.Key) {
	if s.queueDirty(k) > s.cfg.DirtyLimit {
		s.throttle()
	}
}

// queueDirty is enqueue without the throttle (for the stack's own
// re-queues, which must not wait for write-back): it returns the dirty
// bytes.
func (s *Stack) queueDirty(k format.Key) int64 {
	s.mu.Lock()
	first := len(s.queue) == 0
	if !s.queued[k] {
		s.queued[k] = true
		s.queue = append(s.queue, dirtyRef{k: k, at: time.Now()})
	}
	s.mu.Unlock()
	dirty := s.DirtyUsage().Bytes
	if first || s.cfg.DirtyExpire <= 0 || dirty > s.cfg.DirtyBackground {
		s.kick()
	}
	return dirty
}

// requeue puts back a write-back that failed, first in line (it is the
// oldest), after the retry delay.
func (s *Stack) requeue(r dirtyRef) {
	time.AfterFunc(s.cfg.RetryDelay, func() {
		s.mu.Lock()
		if !s.queued[r.k] {
			s.queued[r.k] = true
			s.queue = append([]dirtyRef{r}, s.queue...)
		}
		s.mu.Unlock()
		s.kick()
	})
}

// kick wakes one write-back worker.
func (s *Stack) kick() {
	select {
	case s.work <- struct{}{}:
	default:
	}
}

// dequeue returns the oldest queued key if it is due for write-back.
// Otherwise wait is how long until it is (0: nothing is queued).
func (s *Stack) dequeue() (r dirtyRef, wait time.Duration, ok bool) {
	urgent := s.cfg.DirtyExpire <= 0 || s.pressure.Load() > 0 || s.DirtyUsage().Bytes > s.cfg.DirtyBackground
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.queue) == 0 {
		return dirtyRef{}, 0, false
	}
	r = s.queue[0]
	if !urgent && !s.closed {
		if wait = time.Until(r.at.Add(s.cfg.DirtyExpire)); wait > 0 {
			return dirtyRef{}, wait, false
		}
	}
	s.queue[0] = dirtyRef{}
	s.queue = s.queue[1:]
	delete(s.queued, r.k)
	if len(s.queue) > 0 {
		select { // let a sibling worker share the backlog
		case s.work <- struct{}{}:
		default:
		}
	}
	return r, 0, true
}

// writeBackLoop is one worker of the write-back pool.
func (s *Stack) writeBackLoop() {
	defer s.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		r, wait, ok := s.dequeue()
		if !ok {
			var due <-chan time.Time
			if wait > 0 {
				timer.Reset(wait)
				due = timer.C
			}
			select {
			case <-s.stop:
				return
			case <-s.work:
			case <-due:
			}
			timer.Stop()
			continue
		}
		if err := s.writeBack(r.k, false); err != nil && !errors.Is(err, ErrNotFound) {
			s.stats.writeBackErrors.Add(1)
			s.log.Warn("write-back failed; block stays dirty in memory and is retried", "key", r.k.String(), "err", err)
			s.requeue(r)
		}
	}
}

// throttle makes a writer wait, the dirty bytes being over the limit,
// until write-back brings them under it. It gives up (the writer goes on)
// when write-back cannot help: the stack is closing, every tier is down,
// a write-back failed meanwhile, or RoomWait passed.
func (s *Stack) throttle() {
	s.stats.throttles.Add(1)
	deadline := time.Now().Add(s.cfg.RoomWait)
	failed := s.stats.writeBackErrors.Load()
	for s.DirtyUsage().Bytes > s.cfg.DirtyLimit {
		if s.isClosed() || s.allDown() || s.stats.writeBackErrors.Load() != failed || time.Now().After(deadline) {
			return
		}
		changed := s.roomChanged()
		s.kick()
		select {
		case <-changed:
		case <-time.After(throttlePoll):
		}
	}
}
