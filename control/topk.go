package control

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/ucmfs/ucmfs/control/line"
	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/sparse"
	"github.com/ucmfs/ucmfs/store"
)

// .ucm/topk: rank candidate blocks by their sidecars against a query
// (docs/control.md):
//
//	topk <model> kind=<kind>[:<param>] layer=<n|all> k=<k> heads=<H> dim=<D> q=<base64> <id>...
//	  ->  ok n=<hits> missing=<m> <id>:<score>... [missing <id>...]
//
// q is float32 little-endian, [layers][heads][dim] (one layer, or every
// layer for all). Scores are dot products (kinds 0-2, decimal, higher
// first) or Hamming distances (kind 3, integers, lower first); ties rank
// by id. A candidate's sidecar is its stored one when that has the
// request's kind and param, else derived from its block on the fly (and
// stored when the request's kind is the one the model derives); a
// candidate with neither is listed after "missing", never dropped.
//
// A session keeps the index of its last request: a request with the same
// model, kind, param, layer, shape and ids, whose candidates' files are
// all unchanged (sidecarToken), reuses it and only scans.

// topkSession answers the topk requests of one session.
type topkSession struct {
	s      *Env
	req    topkRequest
	b64    []byte              // the decoded query's bytes
	toks   []store.SourceToken // the candidates' tokens now, for reuse
	sorted []format.ID         // the ids sorted, to find repeats
	last   *topkIndex          // the index of the last request
}

// topkIndex is the index built for a request, with what it was built
// from.
type topkIndex struct {
	model                     string
	kind                      format.ReprKind
	param                     uint32
	layer, layers, heads, dim int
	ids                       []format.ID
	toks                      []store.SourceToken
	idx                       *sparse.Index
	uid                       uint32 // charged held bytes (Env.memory)
	held                      int64
}

// answer handles one topk request.
func (t *topkSession) answer(ctx context.Context, req []byte, out []byte) ([]byte, error) {
	start := time.Now()
	defer t.trim()
	r, err := t.parse(ctx, req)
	if err != nil {
		return out, err
	}
	param := t.s.topkParam(r)
	idx, err := t.index(ctx, r, param)
	if err != nil {
		return out, err
	}
	res, err := idx.Search(r.q, r.k)
	if errors.Is(err, sparse.ErrArgument) {
		return out, line.Err(line.ErrInvalid, "query: %v", err)
	}
	if err != nil {
		return out, err
	}
	c := &t.s.store.Counters
	c.TopKs.Add(1)
	c.TopKCandidates.Add(int64(len(r.ids)))
	c.TopKMissing.Add(int64(len(res.Missing)))
	defer store.ObserveSince(t.s.store.Latency.TopK, start)
	return appendTopK(out, res, r.kind), nil
}

// trim empties the request's buffers, dropping those that grew past
// keepBuffer: an idle session keeps little.
func (t *topkSession) trim() {
	t.req.ids, t.req.q, t.b64, t.sorted = line.Keep(t.req.ids), line.Keep(t.req.q), line.Keep(t.b64), line.Keep(t.sorted)
}

// appendTopK writes the answer line of a result.
func appendTopK(out []byte, res sparse.Result, kind format.ReprKind) []byte {
	out = append(out, "ok n="...)
	out = strconv.AppendInt(out, int64(len(res.Hits)), 10)
	out = append(out, " missing="...)
	out = strconv.AppendInt(out, int64(len(res.Missing)), 10)
	for _, h := range res.Hits {
		out = append(out, ' ')
		out = hex.AppendEncode(out, h.ID[:])
		out = append(out, ':')
		if kind == format.ReprSignHash {
			out = strconv.AppendInt(out, int64(h.Distance), 10)
		} else {
			out = strconv.AppendFloat(out, float64(h.Score), 'g', -1, 32)
		}
	}
	if len(res.Missing) > 0 {
		out = append(out, " missing"...)
		for _, id := range res.Missing {
			out = append(out, ' ')
			out = hex.AppendEncode(out, id[:])
		}
	}
	return append(out, '\n')
}

// topkParam is the param a request ranks with: the one given, else the
// model's when it derives the request's kind, else the kind's default.
func (s *Env) topkParam(r *topkRequest) uint32 {
	if r.param != 0 {
		return r.param
	}
	if set := s.store.Sidecars().Setting(r.model); !set.Off && set.Kind == r.kind {
		return set.Param
	}
	p, _ := sparse.ResolveParam(r.kind, 0)
	return p
}

// index returns the index of the request's candidates: the last one when
// it was built for the same request and every candidate's files are
// unchanged, else a new one (build).
func (t *topkSession) index(ctx context.Context, r *topkRequest, param uint32) (*sparse.Index, error) {
	if l := t.last; l != nil && l.model == r.model && l.kind == r.kind && l.param == param &&
		l.layer == r.layer && l.layers == r.layers && l.heads == r.heads && l.dim == r.dim && slices.Equal(l.ids, r.ids) {
		toks := t.toks[:0]
		for _, id := range r.ids {
			toks = append(toks, t.s.store.Sidecars().CandidateToken(r.model, id))
		}
		t.toks = line.Keep(toks)
		if slices.Equal(toks, l.toks) {
			t.s.store.Counters.TopKReused.Add(1)
			return l.idx, nil
		}
	}
	t.close() // free the old index, and give back its bytes, before building the next
	x, err := t.build(r, param, callerUID(ctx))
	if err != nil {
		return nil, err
	}
	t.last = x
	return x.idx, nil
}

// build gathers the candidates' sidecars into a new index. Its memory is
// charged to uid (Env.memory) before it is allocated: once the first
// sidecar that fits gives the bytes one candidate takes
// (sparse.HeldBytes), those of every candidate left, with what the index
// keeps of each beside (its id, position and token), are taken at once,
// or the request is refused (E2BIG past MaxRequestMemory, ENOMEM past
// the user's or the mount's budget) before anything more is allocated.
func (t *topkSession) build(r *topkRequest, param uint32, uid uint32) (*topkIndex, error) {
	b, err := sparse.NewBuilder(r.kind, r.layer)
	if err != nil {
		return nil, line.Err(line.ErrInvalid, "%v", err)
	}
	x := &topkIndex{model: r.model, kind: r.kind, param: param, layer: r.layer, layers: r.layers,
		heads: r.heads, dim: r.dim, uid: uid}
	// The ids and tokens the index keeps, charged first.
	x.held = int64(len(r.ids)) * topkKept
	if err := t.s.memory.take(uid, x.held); err != nil {
		return nil, line.Err(err, "topk: %d candidates: %v", len(r.ids), err)
	}
	ok := false
	defer func() {
		if !ok {
			t.s.memory.give(uid, x.held)
		}
	}()
	x.ids, x.toks = slices.Clone(r.ids), make([]store.SourceToken, len(r.ids))
	sized, grown := false, false
	for i, id := range r.ids {
		data, tok, derived := t.s.store.Sidecars().Topk(r.model, id, r.kind, param)
		x.toks[i] = tok
		if derived {
			t.s.store.Counters.TopKDerived.Add(1)
		}
		if data == nil || !r.fits(data) {
			_ = b.Add(id, nil) // missing: reported, never dropped
			continue
		}
		if !sized {
			per, err := sparse.HeldBytes(data, r.layer)
			if err != nil {
				t.s.Log.Debug("topk: candidate not ranked", "model", r.model, "id", id.String(), "err", err)
				_ = b.Add(id, nil)
				continue
			}
			left := int64(len(r.ids) - i)
			if per > MaxRequestMemory/left {
				return nil, line.Err(line.ErrTooMany, "topk: %d candidates of %d bytes each (from %s) need more than the %d bytes one request may hold: ask for fewer candidates, one layer, or a smaller kind",
					left, per, id, int64(MaxRequestMemory))
			}
			if err := t.s.memory.take(uid, per*left); err != nil {
				return nil, line.Err(err, "topk: the index of %d candidates of %d bytes each: %v", left, per, err)
			}
			x.held += per * left
			sized = true
		}
		if err := b.Add(id, data); err != nil {
			t.s.Log.Debug("topk: candidate not ranked", "model", r.model, "id", id.String(), "err", err)
			_ = b.Add(id, nil)
			continue
		}
		if !grown {
			b.Grow(len(r.ids) - i - 1) // within what was charged
			grown = true
		}
	}
	x.idx = b.Index()
	ok = true
	return x, nil
}

// topkKept is what an index keeps per candidate beside its values: its
// id, its position, its token (a generous bound, charged with the values).
const topkKept = 128

// distinct drops the repeats of ids in place, keeping each id's first
// place: a candidate named twice is gathered and ranked once, and
// answered once. sorted is scratch; it returns it for reuse.
func distinct(ids, sorted []format.ID) ([]format.ID, []format.ID) {
	sorted = append(sorted[:0], ids...)
	slices.SortFunc(sorted, func(a, b format.ID) int { return bytes.Compare(a[:], b[:]) })
	repeats := false
	for i := 1; i < len(sorted) && !repeats; i++ {
		repeats = sorted[i] == sorted[i-1]
	}
	if !repeats {
		return ids, sorted
	}
	sorted = slices.Compact(sorted)
	used := make([]bool, len(sorted))
	out := ids[:0]
	for _, id := range ids {
		i, _ := slices.BinarySearchFunc(sorted, id, func(a, b format.ID) int { return bytes.Compare(a[:], b[:]) })
		if !used[i] {
			used[i] = true
			out = append(out, id)
		}
	}
	return out, sorted
}

// fits reports whether a sidecar file has the request's shape: its heads,
// its dim (kinds 0-2; kind 3 hashes the query to the sidecar's bits), and
// the layer asked for (all: exactly the query's layers).
func (r *topkRequest) fits(data []byte) bool {
	h, err := format.DecodeReprHeader(data)
	switch {
	case err != nil, int(h.NumKVHeads) != r.heads:
		return false
	case r.kind != format.ReprSignHash && int(h.Dim) != r.dim:
		return false
	case r.layer == sparse.AllLayers:
		return int(h.NumLayers) == r.layers
	}
	return r.layer < int(h.NumLayers)
}

// close frees the session's index and gives back the bytes it held.
func (t *topkSession) close() {
	if l := t.last; l != nil {
		t.s.memory.give(l.uid, l.held)
		t.last = nil
	}
}
