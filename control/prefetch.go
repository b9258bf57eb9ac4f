package control

import (
	"context"
	"strconv"

	"github.com/ucmfs/ucmfs/control/line"
	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/store"
)

// .ucm/prefetch: promote blocks into the memory tier ahead of need.
//
//	<model> <id>...   ->  ok queued=<n> missing=<m>
//	<model> <path>... (a files model: paths in the model)
//
// Every id some tier holds is queued for promotion (store.Store.EnqueuePrefetch)
// and counted in queued; ids no tier holds are counted in missing. The
// answer comes at once; a bounded pool of prefetchWorkers promotes in the
// background. When prefetchQueue promotions already wait, the request
// waits for room (interrupting the writer ends the wait: EINTR).

// In a model of the files layout the files are named by their paths in
// the model instead of ids.

// prefetchSession answers prefetch requests.
type prefetchSession struct {
	s    *Env
	ids  []format.ID
	keys []format.Key
}

// answer queues the present ids of one request.
func (p *prefetchSession) answer(ctx context.Context, req []byte, out []byte) ([]byte, error) {
	t := line.NewTokens(req)
	model, err := p.s.controlModel(ctx, &t, store.AccessExec, "prefetch")
	if err != nil {
		return out, err
	}
	keys, ids, err := p.s.parseKeys(&t, model, p.keys[:0], p.ids)
	p.keys, p.ids = line.Keep(keys), line.Keep(ids)
	if err != nil {
		return out, err
	}
	c := &p.s.store.Counters
	c.Prefetches.Add(1)
	queued, missing := 0, 0
	for _, k := range keys {
		if !p.s.store.Tiers().HasKey(k) {
			missing++
			continue
		}
		if err := p.s.store.EnqueuePrefetch(ctx, k); err != nil {
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
