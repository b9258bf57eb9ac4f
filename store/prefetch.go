package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/tiers"
)

// The promotion pool behind .ucm/prefetch: a bounded queue of keys and
// prefetchWorkers that promote them into the memory tier
// (tiers.Stack.Promote) in the background.

const (
	// prefetchWorkers is the size of the promotion pool.
	prefetchWorkers = 4
	// prefetchQueue is how many promotions may wait.
	prefetchQueue = 1 << 16
)

// prefetcher is the mount's promotion pool, started at the first
// prefetch and stopped at unmount.
type prefetcher struct {
	start   sync.Once
	stop    sync.Once
	jobs    chan format.Key
	done    chan struct{} // closed at stop
	wg      sync.WaitGroup
	pending atomic.Int64 // queued or running
}

func (p *prefetcher) init() {
	p.jobs = make(chan format.Key, prefetchQueue)
	p.done = make(chan struct{})
}

// EnqueuePrefetch queues k for promotion into the memory tier by the pool, waiting for room; it fails once the pool is stopped
// (ErrShutdown) or when ctx ends (ErrInterrupted).
func (s *Store) EnqueuePrefetch(ctx context.Context, k format.Key) error {
	p := &s.prefetch
	p.start.Do(func() {
		for range prefetchWorkers {
			p.wg.Add(1)
			go s.prefetchWorker()
		}
	})
	select {
	case <-p.done:
		return ErrShutdown
	default:
	}
	p.pending.Add(1)
	select {
	case p.jobs <- k:
		return nil
	case <-p.done:
		p.pending.Add(-1)
		return ErrShutdown
	case <-ctx.Done():
		p.pending.Add(-1)
		return fmt.Errorf("%w while waiting for room in the prefetch queue", ErrInterrupted)
	}
}

// prefetchWorker promotes queued keys until the pool stops.
func (s *Store) prefetchWorker() {
	p := &s.prefetch
	defer p.wg.Done()
	for {
		select {
		case <-p.done:
			return
		case k := <-p.jobs:
			// Counted before pending falls: a reader that sees
			// nothing pending reads every promotion's count.
			if err := s.stack.Promote(k); err != nil {
				s.Counters.PrefetchFailed.Add(1)
				if !errors.Is(err, tiers.ErrNotFound) && !errors.Is(err, tiers.ErrFull) {
					s.log.Warn("prefetch failed", "key", k.String(), "err", err)
				}
			} else {
				s.Counters.PrefetchPromoted.Add(1)
			}
			p.pending.Add(-1)
		}
	}
}

// stopPrefetch stops the pool: queued promotions are dropped, running
// ones finish.
func (s *Store) stopPrefetch() {
	p := &s.prefetch
	p.stop.Do(func() {
		close(p.done)
		p.wg.Wait()
		for {
			select {
			case <-p.jobs:
				p.pending.Add(-1)
			default:
				return
			}
		}
	})
}
