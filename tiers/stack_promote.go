package tiers

import "sync"

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

// promoteQueueLen bounds the promotions waiting for the worker.
const promoteQueueLen = 256

// promoteQueue is the queue of promotions decided on the read path.
type promoteQueue struct {
	ch      chan Key
	mu      sync.Mutex
	pending map[Key]bool // keys in ch or being promoted
}

// maybePromote queues k's promotion (size bytes) after a read from a
// lower tier when the admission filter lets it in.
func (s *Stack) maybePromote(k Key, size int64) {
	if s.shouldPromote(k, size) {
		s.promoteLater(k) // off the read path
	}
}

func newPromoteQueue() promoteQueue {
	return promoteQueue{ch: make(chan Key, promoteQueueLen), pending: make(map[Key]bool)}
}

// promoteLater queues k's promotion unless it is queued already or the
// queue is full.
func (s *Stack) promoteLater(k Key) {
	q := &s.promo
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.pending[k] {
		return
	}
	select {
	case q.ch <- k:
		q.pending[k] = true
	default:
		s.stats.promoteDropped.Add(1)
	}
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
