package control

import (
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
	s    *Env
	req  topkRequest
	b64  []byte              // the decoded query's bytes
	toks []store.SourceToken // the candidates' tokens now, for reuse
	last *topkIndex          // the index of the last request
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
}

// answer handles one topk request.
func (t *topkSession) answer(ctx context.Context, req []byte, out []byte) ([]byte, error) {
	start := time.Now()
	r, err := t.parse(ctx, req)
	if err != nil {
		return out, err
	}
	param := t.s.topkParam(r)
	idx, err := t.index(r, param)
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
	if set := s.store.ModelRepr(r.model); !set.Off && set.Kind == r.kind {
		return set.Param
	}
	p, _ := sparse.ResolveParam(r.kind, 0)
	return p
}

// index returns the index of the request's candidates: the last one when
// it was built for the same request and every candidate's files are
// unchanged, else a new one.
func (t *topkSession) index(r *topkRequest, param uint32) (*sparse.Index, error) {
	if l := t.last; l != nil && l.model == r.model && l.kind == r.kind && l.param == param &&
		l.layer == r.layer && l.layers == r.layers && l.heads == r.heads && l.dim == r.dim && slices.Equal(l.ids, r.ids) {
		toks := t.toks[:0]
		for _, id := range r.ids {
			toks = append(toks, t.s.store.CandidateToken(r.model, id))
		}
		t.toks = toks[:0]
		if slices.Equal(toks, l.toks) {
			t.s.store.Counters.TopKReused.Add(1)
			return l.idx, nil
		}
	}
	t.last = nil // free the old index before building the next
	b, err := sparse.NewBuilder(r.kind, r.layer)
	if err != nil {
		return nil, line.Err(line.ErrInvalid, "%v", err)
	}
	toks := make([]store.SourceToken, len(r.ids))
	grown := false
	for i, id := range r.ids {
		data, tok, derived := t.s.store.TopkSidecar(r.model, id, r.kind, param)
		toks[i] = tok
		if derived {
			t.s.store.Counters.TopKDerived.Add(1)
		}
		if data != nil && r.fits(data) {
			err := b.Add(id, data)
			if err == nil {
				if !grown {
					b.Grow(len(r.ids) - i - 1)
					grown = true
				}
				continue
			}
			t.s.Log.Debug("topk: candidate not ranked", "model", r.model, "id", id.String(), "err", err)
		}
		_ = b.Add(id, nil) // missing: reported, never dropped
	}
	t.last = &topkIndex{model: r.model, kind: r.kind, param: param, layer: r.layer, layers: r.layers,
		heads: r.heads, dim: r.dim, ids: slices.Clone(r.ids), toks: toks, idx: b.Index()}
	return t.last.idx, nil
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

// close frees the session's index.
func (t *topkSession) close() { t.last = nil }
