package control

import (
	"context"
	"strconv"

	"github.com/ucmfs/ucmfs/control/line"
	"github.com/ucmfs/ucmfs/format"
)

// .ucm/prefetch: promote blocks into the memory tier ahead of need.
//
//	<model> <id>...   ->  ok queued=<n> missing=<m>
//
// Every id some tier holds is queued for promotion (store.Store.EnqueuePrefetch)
// and counted in queued; ids no tier holds are counted in missing. The
// answer comes at once; a bounded pool of prefetchWorkers promotes in the
// background. When prefetchQueue promotions already wait, the request
// waits for room (interrupting the writer ends the wait: EINTR).

// prefetchSession answers prefetch requests.
type prefetchSession struct {
	s   *Env
	ids []format.ID
}

// answer queues the present ids of one request.
func (p *prefetchSession) answer(ctx context.Context, req []byte, out []byte) ([]byte, error) {
	t := line.NewTokens(req)
	model, err := p.s.controlModel(&t)
	if err != nil {
		return out, err
	}
	ids, err := parseIDs(&t, p.ids[:0])
	p.ids = ids[:0]
	if err != nil {
		return out, err
	}
	c := &p.s.store.Counters
	c.Prefetches.Add(1)
	queued, missing := 0, 0
	for _, id := range ids {
		if !p.s.store.HasBlock(model, id) {
			missing++
			continue
		}
		if err := p.s.store.EnqueuePrefetch(ctx, p.s.store.BlockKey(model, id)); err != nil {
			c.PrefetchQueued.Add(int64(queued))
			c.PrefetchMissing.Add(int64(missing))
			return out, err
		}
		queued++
	}
	c.PrefetchQueued.Add(int64(queued))
	c.PrefetchMissing.Add(int64(missing))
	out = append(out, "ok queued="...)
	out = strconv.AppendInt(out, int64(queued), 10)
	out = append(out, " missing="...)
	out = strconv.AppendInt(out, int64(missing), 10)
	return append(out, '\n'), nil
}

// close has nothing to release: queued promotions go on.
func (p *prefetchSession) close() {}
