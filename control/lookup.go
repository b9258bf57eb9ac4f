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
//	exists <model> <path>... (a files model: paths in the model)
//	hybrid <max_tokens> (<model> <block_size> <n> <id>×n)...  (lookup_hybrid.go)
//
// The bitmap has one character per id, in order: '1' present, '0' absent.
// A block is present when any tier holds it; a block being written is
// not present until its close publishes it. Presence comes from the
// tiers' indexes (store.Models.HasBlock), so a request of 10k ids costs a
// few milliseconds and no allocation per id.

// In a model of the files layout the blocks are named by their paths in
// the model instead of ids (exists <model> <path>...); hybrid takes ids
// only.

// lookupSession answers lookup requests; its buffers serve every request
// of the session.
type lookupSession struct {
	s      *Env
	ids    []format.ID
	keys   []format.Key
	bitmap []byte
}

// presence reports, for the i-th name of a request, whether a tier holds
// it: ids by the model's layout, paths as Files.
type presence func(i int) bool

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
	model, err := l.s.controlModel(ctx, &t, store.AccessExec, "lookup")
	if err != nil {
		return out, err
	}
	var n int
	var has presence
	if l.s.store.Models().LayoutOf(model).Tree() {
		keys, err := parsePaths(&t, model, l.keys[:0])
		l.keys = line.Keep(keys)
		if err != nil {
			return out, err
		}
		n, has = len(keys), func(i int) bool { return l.s.store.Tiers().HasKey(keys[i]) }
	} else {
		ids, err := parseIDs(&t, l.ids[:0])
		l.ids = line.Keep(ids)
		if err != nil {
			return out, err
		}
		n, has = len(ids), func(i int) bool { return l.s.store.Models().HasBlock(model, ids[i]) }
	}
	return l.present(start, prefix, n, has, out), nil
}

// present answers an exists (a bitmap) or prefix (a length) request of n
// names.
func (l *lookupSession) present(start time.Time, prefix bool, n int, has presence, out []byte) []byte {
	c := &l.s.store.Counters
	c.Lookups.Add(1)
	defer store.ObserveSince(l.s.store.Latency.Lookup, start)
	out = append(out, "ok "...)
	if prefix {
		hit := 0
		for hit < n && has(hit) {
			hit++
		}
		c.LookupIDs.Add(int64(min(hit+1, n)))
		c.LookupHits.Add(int64(hit))
		out = strconv.AppendInt(out, int64(hit), 10)
		return append(out, '\n')
	}
	bm := l.bitmap[:0]
	present := 0
	for i := range n {
		if has(i) {
			bm = append(bm, '1')
			present++
		} else {
			bm = append(bm, '0')
		}
	}
	l.bitmap = line.Keep(bm)
	c.LookupIDs.Add(int64(n))
	c.LookupHits.Add(int64(present))
	out = strconv.AppendInt(out, int64(present), 10)
	out = append(out, ' ')
	out = append(out, bm...)
	return append(out, '\n')
}

// close has nothing to release.
func (l *lookupSession) close() {}
