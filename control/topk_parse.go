package control

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"math"
	"strconv"

	"github.com/ucmfs/ucmfs/control/line"
	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/sparse"
)

// Parsing of .ucm/topk requests (grammar in control_topk.go and
// docs/control.md).

// Bounds of a topk request's shape.
const (
	topkMaxHeads  = 1 << 16
	topkMaxDim    = 1 << 16
	topkMaxLayers = 1 << 16
)

// topkRequest is one parsed topk request. Its slices are the session's
// buffers, valid until the session's next request.
type topkRequest struct {
	model  string
	kind   format.ReprKind
	param  uint32 // as given (0: none given; topkParam chooses)
	layer  int    // a layer, or sparse.AllLayers
	layers int    // layers the query holds: 1, or len(q) / (heads × dim) for all
	k      int
	heads  int
	dim    int
	q      []float32
	ids    []format.ID
}

// The options of a request, as bits of the set given.
const (
	optKind = 1 << iota
	optLayer
	optK
	optHeads
	optDim
	optQ
	optAll = optKind | optLayer | optK | optHeads | optDim | optQ
)

// optNames name the options in messages, in bit order.
var optNames = []string{"kind", "layer", "k", "heads", "dim", "q"}

// parse reads a request into the session's buffers.
func (t *topkSession) parse(ctx context.Context, req []byte) (*topkRequest, error) {
	tk := line.NewTokens(req)
	if verb := tk.Next(); string(verb) != "topk" {
		return nil, line.Err(line.ErrInvalid, "unknown topk command %q: want topk", line.Clip(verb))
	}
	model, err := t.s.contentModel(ctx, &tk, "topk")
	if err != nil {
		return nil, err
	}
	r := &t.req
	*r = topkRequest{model: model, ids: r.ids[:0], q: r.q[:0]}
	given := 0
	for {
		before := tk
		tok := tk.Next()
		name, val, isOpt := bytes.Cut(tok, []byte("="))
		if tok == nil || !isOpt {
			tk = before // the ids begin
			break
		}
		bit, err := r.option(t, string(name), val)
		if err != nil {
			return nil, err
		}
		if given&bit != 0 {
			return nil, line.Err(line.ErrInvalid, "option %s given twice", name)
		}
		given |= bit
	}
	for i, n := range optNames {
		if given&(1<<i) == 0 {
			return nil, line.Err(line.ErrInvalid, "missing option %s=", n)
		}
	}
	if r.ids, err = parseIDs(&tk, r.ids); err != nil {
		return nil, err
	}
	r.ids, t.sorted = distinct(r.ids, t.sorted)
	return r, r.checkShape()
}

// option applies one name=value option and returns its bit.
func (r *topkRequest) option(t *topkSession, name string, val []byte) (int, error) {
	var err error
	switch name {
	case "kind":
		r.kind, r.param, err = parseTopKKind(val)
		return optKind, err
	case "layer":
		if string(val) == "all" {
			r.layer = sparse.AllLayers
			return optLayer, nil
		}
		r.layer, err = optInt(name, val, 0, topkMaxLayers-1)
		return optLayer, err
	case "k":
		r.k, err = optInt(name, val, 1, math.MaxInt32)
		return optK, err
	case "heads":
		r.heads, err = optInt(name, val, 1, topkMaxHeads)
		return optHeads, err
	case "dim":
		r.dim, err = optInt(name, val, 1, topkMaxDim)
		return optDim, err
	case "q":
		r.q, err = t.decodeQuery(val)
		return optQ, err
	}
	return 0, line.Err(line.ErrInvalid, "unknown option %q: want kind, layer, k, heads, dim, q, then the ids", line.Clip([]byte(name)))
}

// parseTopKKind parses kind=<name>[:<param>]; the name may also be the
// kind's number (0-3).
func parseTopKKind(val []byte) (format.ReprKind, uint32, error) {
	name, arg, hasArg := bytes.Cut(val, []byte(":"))
	kind, err := format.ParseReprKind(string(name))
	if err != nil {
		n, nerr := strconv.ParseUint(string(name), 10, 32)
		if nerr != nil || !format.ReprKind(n).Valid() {
			return 0, 0, line.Err(line.ErrInvalid, "unknown kind %q: want mean, max, merged[:N] or signhash[:BITS]", line.Clip(val))
		}
		kind = format.ReprKind(n)
	}
	var param uint32
	if hasArg {
		n, err := strconv.ParseUint(string(arg), 10, 32)
		if err != nil || n == 0 || kind == format.ReprMean || kind == format.ReprMax {
			return 0, 0, line.Err(line.ErrInvalid, "kind %q: bad parameter (merged:N with N >= 1, signhash:BITS)", line.Clip(val))
		}
		param = uint32(n)
	}
	if _, err := sparse.ResolveParam(kind, param); err != nil {
		return 0, 0, line.Err(line.ErrInvalid, "kind %q: %v", line.Clip(val), err)
	}
	return kind, param, nil
}

// optInt parses a decimal option value within [lo, hi].
func optInt(name string, val []byte, lo, hi int) (int, error) {
	n, err := strconv.Atoi(string(val))
	if err != nil || n < lo || n > hi {
		return 0, line.Err(line.ErrInvalid, "%s=%q: want an integer from %d to %d", name, line.Clip(val), lo, hi)
	}
	return n, nil
}

// decodeQuery decodes q=: standard base64 (with padding) of float32
// values, little-endian.
func (t *topkSession) decodeQuery(val []byte) ([]float32, error) {
	b := t.b64
	if n := base64.StdEncoding.DecodedLen(len(val)); cap(b) < n {
		b = make([]byte, n)
	}
	n, err := base64.StdEncoding.Decode(b[:cap(b)], val)
	b = b[:max(n, 0)]
	t.b64 = b[:0]
	if err != nil {
		return nil, line.Err(line.ErrInvalid, "q: not standard base64: %v", err)
	}
	if n == 0 || n%4 != 0 {
		return nil, line.Err(line.ErrInvalid, "q: %d bytes, not a whole number of float32 values", n)
	}
	q := t.req.q[:0]
	for i := 0; i < n; i += 4 {
		q = append(q, math.Float32frombits(binary.LittleEndian.Uint32(b[i:])))
	}
	return q, nil
}

// checkShape checks the query against heads and dim: heads × dim values
// for one layer, a whole number of layers of them for all.
func (r *topkRequest) checkShape() error {
	per := r.heads * r.dim
	switch {
	case r.layer != sparse.AllLayers && len(r.q) != per:
		return line.Err(line.ErrInvalid, "q has %d values, want heads %d * dim %d = %d", len(r.q), r.heads, r.dim, per)
	case r.layer == sparse.AllLayers && len(r.q)%per != 0:
		return line.Err(line.ErrInvalid, "q has %d values, not a whole number of layers of heads %d * dim %d", len(r.q), r.heads, r.dim)
	case r.layer == sparse.AllLayers && len(r.q)/per > topkMaxLayers:
		return line.Err(line.ErrInvalid, "q has %d layers, more than %d", len(r.q)/per, topkMaxLayers)
	}
	r.layers = len(r.q) / per
	return nil
}
