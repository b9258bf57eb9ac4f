package fs

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/ucmfs/ucmfs/hashdir"
	"github.com/ucmfs/ucmfs/tiers"
)

// .ucm/prefetch: promote blocks into the memory tier ahead of need.
//
//	<model> <id>...   ->  ok queued=<n> missing=<m>
//
// Every id some tier holds is queued for promotion (tiers.Stack.Promote)
// and counted in queued; ids no tier holds are counted in missing. The
// answer comes at once; a bounded pool of prefetchWorkers promotes in the
// background. When prefetchQueue promotions already wait, the request
// waits for room (interrupting the writer ends the wait: EINTR).

const (
	// prefetchWorkers is the size of the promotion pool.
	prefetchWorkers = 4
	// prefetchQueue is how many promotions may wait.
	prefetchQueue = 1 << 16
)

func init() {
	registerControl(controlSpec{name: "prefetch", ino: inoPrefetch, open: func(s *fsState) controlHandler {
		return &prefetchSession{s: s}
	}})
}

// prefetcher is the mount's promotion pool, started at the first
// prefetch and stopped at unmount.
type prefetcher struct {
	start   sync.Once
	stop    sync.Once
	jobs    chan tiers.Key
	done    chan struct{} // closed at stop
	wg      sync.WaitGroup
	pending atomic.Int64 // queued or running
}

func (p *prefetcher) init() {
	p.jobs = make(chan tiers.Key, prefetchQueue)
	p.done = make(chan struct{})
}

// enqueue queues k, waiting for room; it fails once the pool is stopped
// (ESHUTDOWN) or when ctx ends (EINTR).
func (s *fsState) enqueuePrefetch(ctx context.Context, k tiers.Key) error {
	p := &s.prefetch
	p.start.Do(func() {
		for range prefetchWorkers {
			p.wg.Add(1)
			go s.prefetchWorker()
		}
	})
	select {
	case <-p.done:
		return reqErr(syscall.ESHUTDOWN, "the mount is going away")
	default:
	}
	p.pending.Add(1)
	select {
	case p.jobs <- k:
		return nil
	case <-p.done:
		p.pending.Add(-1)
		return reqErr(syscall.ESHUTDOWN, "the mount is going away")
	case <-ctx.Done():
		p.pending.Add(-1)
		return reqErr(syscall.EINTR, "interrupted while waiting for room in the prefetch queue")
	}
}

// prefetchWorker promotes queued keys until the pool stops.
func (s *fsState) prefetchWorker() {
	p := &s.prefetch
	defer p.wg.Done()
	for {
		select {
		case <-p.done:
			return
		case k := <-p.jobs:
			err := s.stack.Promote(k)
			p.pending.Add(-1)
			if err != nil {
				s.ctl.prefetchFailed.Add(1)
				if !errors.Is(err, tiers.ErrNotFound) && !errors.Is(err, tiers.ErrFull) {
					s.log.Warn("prefetch failed", "key", k.String(), "err", err)
				}
				continue
			}
			s.ctl.prefetchPromoted.Add(1)
		}
	}
}

// stopPrefetch stops the pool: queued promotions are dropped, running
// ones finish.
func (s *fsState) stopPrefetch() {
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

// prefetchSession answers prefetch requests.
type prefetchSession struct {
	s   *fsState
	ids []hashdir.ID
}

// answer queues the present ids of one request.
func (p *prefetchSession) answer(ctx context.Context, req []byte, out []byte) ([]byte, error) {
	t := tokens{b: req}
	model, err := p.s.controlModel(&t)
	if err != nil {
		return out, err
	}
	ids, err := parseIDs(&t, p.ids[:0])
	p.ids = ids[:0]
	if err != nil {
		return out, err
	}
	c := &p.s.ctl
	c.prefetches.Add(1)
	queued, missing := 0, 0
	for _, id := range ids {
		if !p.s.stack.HasBlock(model, id) {
			missing++
			continue
		}
		if err := p.s.enqueuePrefetch(ctx, tiers.Key{Model: model, ID: id}); err != nil {
			c.prefetchQueued.Add(int64(queued))
			c.prefetchMissing.Add(int64(missing))
			return out, err
		}
		queued++
	}
	c.prefetchQueued.Add(int64(queued))
	c.prefetchMissing.Add(int64(missing))
	out = append(out, "ok queued="...)
	out = strconv.AppendInt(out, int64(queued), 10)
	out = append(out, " missing="...)
	out = strconv.AppendInt(out, int64(missing), 10)
	return append(out, '\n'), nil
}

// close has nothing to release: queued promotions go on.
func (p *prefetchSession) close() {}
