package sparse

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/ucmfs/ucmfs/format"
)

// AllLayers, as the layer of NewBuilder, makes an index of every layer:
// its queries hold one vector per layer and head, and scores sum over the
// layers.
const AllLayers = -1

// Index is the representations of a set of candidate blocks, one kind and
// one shape, held in one contiguous matrix (float32 for kinds 0-2, packed
// 64-bit words for kind 3) that every Search scans. It is built once and
// reused across queries; nothing changes it but SetWorkers, so any number
// of searches may run on it at once.
type Index struct {
	kind      format.ReprKind
	layer     int // AllLayers or the layer held
	param     uint32
	numLayers int // layers of the sidecars
	layers    int // layers held: 1 or numLayers
	heads     int
	rows      int // vectors (kind 3: codes) per layer and head
	dim       int // elements per vector (kind 3: code bytes)
	wpr       int // kind 3: 64-bit words per code
	stride    int // elements (kind 3: words) per candidate

	ids     []format.ID // per candidate held
	pos     []int       // per candidate held: its ordinal among the Add calls
	missing []format.ID
	data    []float32 // kinds 0-2: len(ids) × stride
	codes   []uint64  // kind 3: len(ids) × stride
	workers int
}

// Builder collects candidate sidecars into an Index. The first sidecar
// added fixes the shape (layers, heads, rows, dim, param); later ones
// must match it. A Builder is not safe for concurrent use.
type Builder struct {
	x      Index
	shaped bool
	adds   int
}

// NewBuilder returns a Builder of an index of kind over one layer (0 ..
// num_layers-1) or AllLayers.
func NewBuilder(kind format.ReprKind, layer int) (*Builder, error) {
	if !kind.Valid() {
		return nil, fmt.Errorf("%w: unknown sidecar kind %d", ErrArgument, uint32(kind))
	}
	if layer < AllLayers {
		return nil, fmt.Errorf("%w: layer %d", ErrArgument, layer)
	}
	return &Builder{x: Index{kind: kind, layer: layer}}, nil
}

// Grow reserves room for n more candidates once the shape is known (after
// the first Add); before that it does nothing.
func (b *Builder) Grow(n int) {
	x := &b.x
	if !b.shaped || n <= 0 {
		return
	}
	if x.kind == format.ReprSignHash {
		x.codes = growCap(x.codes, n*x.stride)
	} else {
		x.data = growCap(x.data, n*x.stride)
	}
	x.ids = growCap(x.ids, n)
	x.pos = growCap(x.pos, n)
}

func growCap[T any](s []T, n int) []T {
	if cap(s)-len(s) >= n {
		return s
	}
	ns := make([]T, len(s), len(s)+n)
	copy(ns, s)
	return ns
}

// Add adds candidate id with its sidecar file repr (a whole <id>.repr:
// header and data). A nil or empty repr records id as missing: it is
// reported in Missing, never ranked. The sidecar is checked as ParseRepr
// does (CRC included); its id must be id, its kind the builder's, its
// shape the first sidecar's (ErrMismatch), its dtype float16, bfloat16 or
// float32 for kinds 0-2 (ErrUnsupported). A rejected sidecar leaves the
// builder as it was.
func (b *Builder) Add(id format.ID, repr []byte) error {
	if len(repr) == 0 {
		b.x.missing = append(b.x.missing, id)
		b.adds++
		return nil
	}
	r, err := ParseRepr(repr)
	if err != nil {
		return fmt.Errorf("candidate %s: %w", id, err)
	}
	if err := b.check(id, r); err != nil {
		return err
	}
	x := &b.x
	lo, hi := 0, x.numLayers
	if x.layer != AllLayers {
		lo, hi = x.layer, x.layer+1
	}
	per := x.heads * x.rows * x.dim // elements (bytes for kind 3) per layer
	src := r.Data[lo*per*r.Header.Dtype.Size() : hi*per*r.Header.Dtype.Size()]
	if x.kind == format.ReprSignHash {
		x.codes = appendCodes(x.codes, src, x.dim, x.wpr)
	} else {
		n := len(x.data)
		x.data = append(x.data, make([]float32, x.stride)...)
		decodeFloats(x.data[n:], src, r.Header.Dtype)
	}
	x.ids = append(x.ids, id)
	x.pos = append(x.pos, b.adds)
	b.adds++
	return nil
}

// check validates r against the builder, fixing the shape on first use.
func (b *Builder) check(id format.ID, r Repr) error {
	h, x := r.Header, &b.x
	switch {
	case h.ID != id:
		return fmt.Errorf("%w: candidate %s has the sidecar of %s", ErrMismatch, id, h.ID)
	case h.Kind != x.kind:
		return fmt.Errorf("%w: candidate %s has a sidecar of kind %s, the index is of kind %s", ErrMismatch, id, h.Kind, x.kind)
	case x.kind != format.ReprSignHash && !floatDtype(h.Dtype):
		return fmt.Errorf("%w: candidate %s: sidecar dtype %s, want float16, bfloat16 or float32", ErrUnsupported, id, h.Dtype)
	case x.layer >= int(h.NumLayers):
		return fmt.Errorf("%w: candidate %s: layer %d of a sidecar of %d layers", ErrMismatch, id, x.layer, h.NumLayers)
	}
	if !b.shaped {
		x.param, x.numLayers = h.Param, int(h.NumLayers)
		x.heads, x.rows, x.dim = int(h.NumKVHeads), int(h.Rows), int(h.Dim)
		x.layers = 1
		if x.layer == AllLayers {
			x.layers = x.numLayers
		}
		x.wpr = (x.dim + 7) / 8
		x.stride = x.layers * x.heads * x.rows * x.dim
		if x.kind == format.ReprSignHash {
			x.stride = x.layers * x.heads * x.rows * x.wpr
		}
		b.shaped = true
		return nil
	}
	if int(h.NumLayers) != x.numLayers || int(h.NumKVHeads) != x.heads || int(h.Rows) != x.rows ||
		int(h.Dim) != x.dim || h.Param != x.param {
		return fmt.Errorf("%w: candidate %s: sidecar shape layers %d heads %d rows %d dim %d param %d, the index has %d %d %d %d %d",
			ErrMismatch, id, h.NumLayers, h.NumKVHeads, h.Rows, h.Dim, h.Param, x.numLayers, x.heads, x.rows, x.dim, x.param)
	}
	return nil
}

// HeldBytes is the memory an index over layer (a layer or AllLayers)
// holds for one candidate with the sidecar file repr: its values as
// float32 (kinds 0-2), or its codes as 64-bit words (kind 3), of the
// layers held. It reads only the header, and fails (ErrArgument) when the
// file's size is not what its header implies: the answer is then bounded
// by the file's size (at most 8 times it, for 1-byte codes), so a caller
// can size an index by it before anything is allocated.
func HeldBytes(repr []byte, layer int) (int64, error) {
	h, err := format.DecodeReprHeader(repr)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrArgument, err)
	}
	n, ok := h.PayloadSize()
	if !ok || n != uint64(len(repr)-format.HeaderSize) {
		return 0, fmt.Errorf("%w: a sidecar file of %d bytes whose header implies another size", ErrArgument, len(repr))
	}
	layers := int64(1)
	if layer == AllLayers {
		layers = int64(h.NumLayers)
	}
	vectors := layers * int64(h.NumKVHeads) * int64(h.Rows)
	if h.Kind == format.ReprSignHash {
		return vectors * int64((h.Dim+7)/8) * 8, nil
	}
	return vectors * int64(h.Dim) * 4, nil
}

// appendCodes appends the codes of src (consecutive codes of dim bytes)
// to dst, each as wpr little-endian 64-bit words, zero-padded.
func appendCodes(dst []uint64, src []byte, dim, wpr int) []uint64 {
	var buf [8]byte
	for len(src) > 0 {
		code := src[:dim]
		for w := 0; w < wpr; w++ {
			buf = [8]byte{}
			copy(buf[:], code[min(8*w, dim):min(8*w+8, dim)])
			dst = append(dst, binary.LittleEndian.Uint64(buf[:]))
		}
		src = src[dim:]
	}
	return dst
}

// Index returns the index of the candidates added so far. Adding more
// afterwards does not change it.
func (b *Builder) Index() *Index {
	x := b.x
	x.missing = slices.Clone(x.missing)
	return &x
}

// Kind is the kind of the index's sidecars.
func (x *Index) Kind() format.ReprKind { return x.kind }

// Layer is the layer the index holds, or AllLayers.
func (x *Index) Layer() int { return x.layer }

// Len is the number of candidates the index ranks (those with a sidecar).
func (x *Index) Len() int { return len(x.ids) }

// Missing lists, in the order they were added, the candidates that had no
// sidecar.
func (x *Index) Missing() []format.ID { return slices.Clone(x.missing) }

// QueryLen is the number of float32 a query of Search must have for kinds
// 0-2: layers held × heads × dim, laid out [layer][head][dim]. It is 0
// for an index of kind 3 (whose queries may have any head dimension) or
// without candidates.
func (x *Index) QueryLen() int {
	if x.kind == format.ReprSignHash {
		return 0
	}
	return x.layers * x.heads * x.dim
}

// SetWorkers sets how many goroutines a Search may use; n <= 0 means
// GOMAXPROCS. Call it before the index is shared.
func (x *Index) SetWorkers(n int) { x.workers = n }
