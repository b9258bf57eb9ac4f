package sparse

import (
	"sync"

	"github.com/ucmfs/ucmfs/format"
)

// deriver holds the shape of one derivation and its scratch buffers.
type deriver struct {
	dt         format.Dtype
	tokens     int // block_size
	heads, dim int
	rows       int // rows per head of the output (kind 2), else 1
	merge      int // tokens per row (kind 2)
	layerOut   int // output bytes per layer
	proj       *projection
	s          *scratch
}

// scratch is reused across derivations through scratchPool.
type scratch struct {
	accF []float32 // running max, or one output row
	acc  []float64 // running sum
	sums []float64 // projections of one head (kind 3)
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

func newDeriver(b format.BlockHeader, r format.ReprHeader) deriver {
	d := deriver{dt: b.Dtype, tokens: int(b.BlockSize), heads: int(b.NumKVHeads), dim: int(b.HeadDim),
		rows: int(r.Rows), merge: int(r.Param), s: scratchPool.Get().(*scratch)}
	n := d.heads * d.dim
	d.layerOut = d.heads * int(r.Rows) * int(r.Dim) * r.Dtype.Size()
	d.s.accF = resize(d.s.accF, n)
	d.s.acc = resize(d.s.acc, n)
	if r.Kind == format.ReprSignHash {
		d.proj = getProjection(d.dim, int(r.Param))
		d.s.sums = resize(d.s.sums, int(r.Param))
	}
	return d
}

func (d *deriver) release() { scratchPool.Put(d.s) }

func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// token is the bytes of token t of the K tensor k.
func (d *deriver) token(k []byte, t int) []byte {
	n := d.heads * d.dim * d.dt.Size()
	return k[t*n : (t+1)*n]
}

// sum adds tokens [lo, hi) of k into acc (zeroed first), in token order.
func (d *deriver) sum(k []byte, lo, hi int) []float64 {
	acc := d.s.acc
	clear(acc)
	for t := lo; t < hi; t++ {
		accumulate(acc, d.token(k, t), d.dt)
	}
	return acc
}

// mean writes the per-head mean keys, [heads][1][dim] float32.
func (d *deriver) mean(out, k []byte) {
	acc := d.sum(k, 0, d.tokens)
	f := d.s.accF
	n := float64(d.tokens)
	for j, v := range acc {
		f[j] = float32(v / n)
	}
	putFloats(out, f)
}

// max writes the per-head element-wise maxima, [heads][1][dim] float32,
// with the builtin max: a NaN in any token makes the element NaN, and +0
// beats -0.
func (d *deriver) max(out, k []byte) {
	m := d.s.accF
	decodeFloats(m, d.token(k, 0), d.dt)
	for t := 1; t < d.tokens; t++ {
		maximize(m, d.token(k, t), d.dt)
	}
	putFloats(out, m)
}

// merged writes, per head, the mean of each group of merge consecutive
// tokens (the last group may be shorter): [heads][rows][dim] float32.
func (d *deriver) merged(out, k []byte) {
	for r := 0; r < d.rows; r++ {
		lo := r * d.merge
		hi := min(lo+d.merge, d.tokens)
		acc := d.sum(k, lo, hi)
		n := float64(hi - lo)
		for h := 0; h < d.heads; h++ {
			f := d.s.accF[:d.dim]
			for j, v := range acc[h*d.dim : (h+1)*d.dim] {
				f[j] = float32(v / n)
			}
			o := 4 * (h*d.rows + r) * d.dim
			putFloats(out[o:o+4*d.dim], f)
		}
	}
}

// signHash writes, per head, the sign-hash code of the mean key (in
// float64, not rounded to float32): [heads][1][bits/8] uint8.
func (d *deriver) signHash(out, k []byte) {
	acc := d.sum(k, 0, d.tokens)
	n := float64(d.tokens)
	for j := range acc {
		acc[j] /= n
	}
	nb := d.proj.bits / 8
	for h := 0; h < d.heads; h++ {
		d.proj.hash(out[h*nb:(h+1)*nb], acc[h*d.dim:(h+1)*d.dim], d.s.sums)
	}
}
