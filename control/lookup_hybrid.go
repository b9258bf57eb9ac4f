package control

import (
	"context"
	"strconv"
	"time"

	"github.com/ucmfs/ucmfs/control/line"
	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/hybrid"
	"github.com/ucmfs/ucmfs/store"
)

// The hybrid request of .ucm/lookup (docs/hybrid.md): the prefix hit
// vLLM's hybrid KV-cache manager would accept for one prompt whose
// KV-cache groups live in one model directory each.
//
//	hybrid <max_tokens> (<model> <block_size> <n> <id>×n)...
//	  ->  ok <hit_tokens> <first>-<end>...
//
// Each group's kind is its model's user.ucm.group; the answer is the hit
// in tokens and, per group in the request's order, the block indices to
// load [first, end) (hybrid.HitLength, hybrid.Needed).

// maxGroups bounds the groups of one hybrid request.
const maxGroups = 64

// hybridLookup answers one hybrid request (after its verb).
func (l *lookupSession) hybridLookup(ctx context.Context, t *line.Tokens, out []byte) ([]byte, error) {
	start := time.Now()
	maxTokens, ok := line.Count(t.Next())
	if !ok {
		return out, line.Err(line.ErrInvalid, "hybrid: max_tokens is not a count")
	}
	var groups []hybrid.Group
	total := 0
	for !t.Done() {
		if len(groups) == maxGroups {
			return out, line.Err(line.ErrTooMany, "hybrid: more than %d groups", maxGroups)
		}
		model, err := l.s.controlModel(ctx, t, store.AccessExec, "lookup")
		if err != nil {
			return out, err
		}
		bs, ok := line.Count(t.Next())
		if !ok || bs < 1 {
			return out, line.Err(line.ErrInvalid, "hybrid: group %d: block size is not a positive count", len(groups)+1)
		}
		n, ok := line.Count(t.Next())
		if !ok || total+int(n) > MaxIDs {
			return out, line.Err(line.ErrInvalid, "hybrid: group %d: the id count is not a count of at most %d ids in all", len(groups)+1, MaxIDs)
		}
		total += int(n)
		// Sized by the ids the line holds as they are read, not by the
		// count it claims.
		var ids []format.ID
		for i := range int(n) {
			tok := t.Next()
			id, ok := line.ID(tok)
			if !ok {
				return out, line.Err(line.ErrInvalid, "hybrid: group %d, id %d %q: not 32 lowercase hex digits", len(groups)+1, i+1, line.Clip(tok))
			}
			ids = append(ids, id)
		}
		groups = append(groups, hybrid.Group{
			Spec: l.s.store.Models().Group(model), BlockSize: int(bs), IDs: ids,
			Exists: func(id format.ID) bool { return l.s.store.Models().HasBlock(model, id) }, // the model's layout names the file
		})
	}
	if len(groups) == 0 {
		return out, line.Err(line.ErrInvalid, "hybrid: no groups")
	}
	hit, err := hybrid.HitLength(groups, int(maxTokens))
	if err != nil {
		return out, line.Err(line.ErrInvalid, "hybrid: %v", err)
	}
	c := &l.s.store.Counters
	c.Lookups.Add(1)
	c.LookupIDs.Add(int64(total))
	defer store.ObserveSince(l.s.store.Latency.Lookup, start)
	out = append(out, "ok "...)
	out = strconv.AppendInt(out, int64(hit), 10)
	for _, g := range groups {
		first, end := hybrid.Needed(g.Spec, g.BlockSize, hit)
		out = append(out, ' ')
		out = strconv.AppendInt(out, int64(first), 10)
		out = append(out, '-')
		out = strconv.AppendInt(out, int64(end), 10)
	}
	return append(out, '\n'), nil
}
