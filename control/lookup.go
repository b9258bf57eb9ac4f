package control

import (
	"context"
	"strconv"
	"time"

	"github.com/ucmfs/ucmfs/control/line"
	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/store"
)

// .ucm/lookup: batch existence of blocks, and the engine's prefix match.
//
//	exists <model> <id>...   ->  ok <present> <bitmap>
//	prefix <model> <id>...   ->  ok <length of the longest present prefix>
//	hybrid <max_tokens> (<model> <block_size> <n> <id>×n)...  (lookup_hybrid.go)
//
// The bitmap has one character per id, in order: '1' present, '0' absent.
// A block is present when any tier holds it; a block being written is
// not present until its close publishes it. Presence comes from the
// tiers' indexes (store.Store.HasBlock), so a request of 10k ids costs a
// few milliseconds and no allocation per id.

// lookupSession answers lookup requests; its buffers serve every request
// of the session.
type lookupSession struct {
	s      *Env
	ids    []format.ID
	bitmap []byte
}

// answer handles one exists or prefix request.
func (l *lookupSession) answer(ctx context.Context, req []byte, out []byte) ([]byte, error) {
	start := time.Now()
	t := line.NewTokens(req)
	verb := t.Next()
	prefix := false
	switch string(verb) {
	case "exists":
	case "prefix":
		prefix = true
	case "hybrid":
		return l.hybridLookup(ctx, &t, out)
	default:
		return out, line.Err(line.ErrInvalid, "unknown lookup command %q: want exists, prefix or hybrid", line.Clip(verb))
	}
	model, err := l.s.controlModel(&t)
	if err != nil {
		return out, err
	}
	ids, err := parseIDs(&t, l.ids[:0])
	l.ids = ids[:0]
	if err != nil {
		return out, err
	}
	st := l.s
	c := &l.s.store.Counters
	c.Lookups.Add(1)
	defer store.ObserveSince(l.s.store.Latency.Lookup, start)
	out = append(out, "ok "...)
	if prefix {
		n := 0
		for n < len(ids) && st.store.HasBlock(model, ids[n]) {
			n++
		}
		c.LookupIDs.Add(int64(min(n+1, len(ids))))
		c.LookupHits.Add(int64(n))
		out = strconv.AppendInt(out, int64(n), 10)
		return append(out, '\n'), nil
	}
	bm := l.bitmap[:0]
	present := 0
	for _, id := range ids {
		if st.store.HasBlock(model, id) {
			bm = append(bm, '1')
			present++
		} else {
			bm = append(bm, '0')
		}
	}
	l.bitmap = bm[:0]
	c.LookupIDs.Add(int64(len(ids)))
	c.LookupHits.Add(int64(present))
	out = strconv.AppendInt(out, int64(present), 10)
	out = append(out, ' ')
	out = append(out, bm...)
	return append(out, '\n'), nil
}

// close has nothing to release.
func (l *lookupSession) close() {}
