package tiers

import (
	"sync"
	"time"

	"github.com/ucmfs/ucmfs/format"
)

// Promotion off the read path
//
// A read of a block found only on a directory tier is served from that
// tier's file (the mount hands the kernel its descriptor: passthrough at
// that file's page-cache speed) and never waits for a copy. When the
// block should be promoted (memory has room, or the TinyLFU filter has
// seen it before: shouldPromote), the promotion is queued and a
// background worker copies it into memory, CRC-checked, as a prefetch
// does; the next open finds it there. The queue is bounded
// (promoteQueueLen) and holds each key once; a promotion that finds no
// room is dropped (the filter decides again at the next read).
//
// Promotions that evict are paced (promoteQueue.take): when memory is full, a
// uniform working set larger than memory is admitted by TinyLFU block
// after block (every block is seen again soon), and promoting each one
// would copy and CRC a block per read, evicting another, while the read
// itself is served as fast from the lower tier's page cache. A token
// bucket bounds the bytes such promotions copy to a sixteenth of the
// memory tier's capacity per second (a full turnover in 16 s; at least
// promotePaceMin), with one second's worth as burst. Promotions into free
// room (memory's room less the promotions already queued) are not paced:
// they fill memory once and evict nothing.

// promoteQueueLen bounds the promotions waiting for the worker.
const promoteQueueLen = 256

// promotePaceMin is the least rate, in bytes per second, of promotions
// that evict.
const promotePaceMin = 16 << 20

// promoteQueue is the queue of promotions decided on the read path.
type promoteQueue struct {
	ch      chan format.Key
	mu      sync.Mutex
	pending map[format.Key]int64 // keys in ch or being promoted, with their sizes
	bytes   int64                // the sizes in pending
	tokens  float64              // bytes promotions that evict may still copy (under mu)
	filled  time.Time            // when tokens was last refilled (under mu)
}

// maybePromote queues k's promotion (size bytes) after a read from a
// lower tier when the admission filter lets it in and, if it would
// evict (memory's room, less the promotions already queued, is short of
// size), the pace allows it. It drops it when the queue is full.
func (s *Stack) maybePromote(k format.Key, size int64) {
	if !s.shouldPromote(k, size) {
		return
	}
	q := &s.promo
	q.mu.Lock()
	defer q.mu.Unlock()
	if _, ok := q.pending[k]; ok {
		return
	}
	if s.mem.Room()-q.bytes < size && !q.take(size, s.mem.Usage().Capacity) {
		s.stats.promoteDropped.Add(1)
		return
	}
	select {
	case q.ch <- k:
		q.pending[k] = size
		q.bytes += size
	default:
		s.stats.promoteDropped.Add(1)
	}
}

// take takes size bytes from the bucket of promotions that evict, whose
// rate follows capacity (the memory tier's); it reports false when the
// bucket holds less. Under q.mu.
func (q *promoteQueue) take(size, capacity int64) bool {
	rate := float64(max(capacity/16, promotePaceMin))
	now := time.Now()
	if q.filled.IsZero() {
		q.tokens = rate
	} else {
		q.tokens = min(rate, q.tokens+rate*now.Sub(q.filled).Seconds())
	}
	q.filled = now
	if q.tokens < float64(size) {
		return false
	}
	q.tokens -= float64(size)
	return true
}

func newPromoteQueue() promoteQueue {
	return promoteQueue{ch: make(chan format.Key, promoteQueueLen), pending: make(map[format.Key]int64)}
}

// promoteLoop runs the queued promotions until the stack stops.
func (s *Stack) promoteLoop() {
	defer s.wg.Done()
	for {
		select {
		case <-s.stop:
			return
		case k := <-s.promo.ch:
			if err := s.Promote(k); err != nil {
				s.stats.promoteDropped.Add(1)
			}
			s.promo.mu.Lock()
			s.promo.bytes -= s.promo.pending[k]
			delete(s.promo.pending, k)
			s.promo.mu.Unlock()
		}
	}
}

// promoting reports whether a promotion is queued or running (tests).
func (s *Stack) promoting() int {
	s.promo.mu.Lock()
	defer s.promo.mu.Unlock()
	return len(s.promo.pending)
}
