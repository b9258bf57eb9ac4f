package sparse

import (
	"bytes"
	"encoding/binary"
	"math"
	"sort"

	"github.com/ucmfs/ucmfs/format"
)

// The reference implementation: plain loops over the bytes, written from
// docs/spec.md §4-5 and docs/sparse.md without the package's fast paths, against
// which the tests compare every kind.

// refF16 converts binary16 with math.Ldexp, independently of f16ToF32.
func refF16(h uint16) float32 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	e, m := int(h>>10)&31, float64(h&0x3ff)
	switch e {
	case 0:
		return float32(sign * math.Ldexp(m, -24))
	case 31:
		if m == 0 {
			return float32(sign * math.Inf(1))
		}
		return math.Float32frombits(uint32(h&0x8000)<<16 | 0x7f800000 | uint32(h&0x3ff)<<13)
	}
	return float32(sign * math.Ldexp(1+m/1024, e-15))
}

// refElem is element i of a little-endian array of dtype dt.
func refElem(b []byte, dt format.Dtype, i int) float32 {
	switch dt {
	case format.Float32:
		return math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	case format.BFloat16:
		return math.Float32frombits(uint32(binary.LittleEndian.Uint16(b[2*i:])) << 16)
	case format.Float16:
		return refF16(binary.LittleEndian.Uint16(b[2*i:]))
	}
	panic("refElem: dtype " + dt.String())
}

// refKey is element d of head h of token t of the K tensor of layer l.
func refKey(block []byte, bh format.BlockHeader, l, t, h, d int) float32 {
	T := int(bh.TensorsPerLayer)
	if T == 0 {
		T = 2
	}
	B, H, D := int(bh.BlockSize), int(bh.NumKVHeads), int(bh.HeadDim)
	tensor := (l*T + 0) * B * H * D
	return refElem(block[64:], bh.Dtype, tensor+(t*H+h)*D+d)
}

// refRepr is a reference derivation: f for kinds 0-2, codes for kind 3,
// both [layers][heads][rows][dim].
type refRepr struct {
	rows, dim int
	f         []float32
	codes     []byte
}

func refDerive(block []byte, kind format.ReprKind, param int) refRepr {
	bh, err := format.DecodeBlockHeader(block)
	if err != nil {
		panic(err)
	}
	L, B, H, D := int(bh.NumLayers), int(bh.BlockSize), int(bh.NumKVHeads), int(bh.HeadDim)
	var out refRepr
	for l := 0; l < L; l++ {
		for h := 0; h < H; h++ {
			switch kind {
			case format.ReprMean, format.ReprMerged:
				merge := B
				if kind == format.ReprMerged {
					merge = param
				}
				out.rows, out.dim = (B+merge-1)/merge, D
				for r := 0; r*merge < B; r++ {
					end := min(B, (r+1)*merge)
					for d := 0; d < D; d++ {
						s := 0.0
						for t := r * merge; t < end; t++ {
							s += float64(refKey(block, bh, l, t, h, d))
						}
						out.f = append(out.f, float32(s/float64(end-r*merge)))
					}
				}
			case format.ReprMax:
				out.rows, out.dim = 1, D
				for d := 0; d < D; d++ {
					m := refKey(block, bh, l, 0, h, d)
					for t := 1; t < B; t++ {
						v := refKey(block, bh, l, t, h, d)
						switch {
						case math.IsNaN(float64(m)):
						case math.IsNaN(float64(v)), v > m, v == 0 && m == 0 && !math.Signbit(float64(v)):
							m = v
						}
					}
					out.f = append(out.f, m)
				}
			case format.ReprSignHash:
				out.rows, out.dim = 1, param/8
				mean := make([]float64, D)
				for d := range mean {
					for t := 0; t < B; t++ {
						mean[d] += float64(refKey(block, bh, l, t, h, d))
					}
					mean[d] /= float64(B)
				}
				out.codes = append(out.codes, refHash(mean, param)...)
			}
		}
	}
	return out
}

// refHash sign-hashes x with the package's projection, one bit at a time.
func refHash(x []float64, bits int) []byte {
	p := getProjection(len(x), bits)
	code := make([]byte, bits/8)
	for i := 0; i < bits; i++ {
		s := 0.0
		for d := range x {
			s += float64(p.rows[i*len(x)+d] * x[d])
		}
		if s > 0 {
			code[i/8] |= 1 << (i % 8)
		}
	}
	return code
}

// refHit is a reference ranking entry.
type refHit struct {
	id    format.ID
	pos   int
	score float64 // kinds 0-2
	dist  int     // kind 3
}

// refTopK scores every candidate with plain loops (float64 sums) and
// sorts them all: score descending (NaN last) or distance ascending, then
// id, then position.
func refTopK(kind format.ReprKind, layer int, cands []Candidate, query []float32, k int) ([]refHit, []format.ID) {
	var hits []refHit
	var missing []format.ID
	for pos, c := range cands {
		if c.Repr == nil {
			missing = append(missing, c.ID)
			continue
		}
		r, err := ParseRepr(c.Repr)
		if err != nil {
			panic(err)
		}
		h := r.Header
		L, H, R, D := int(h.NumLayers), int(h.NumKVHeads), int(h.Rows), int(h.Dim)
		lo, hi := 0, L
		if layer != AllLayers {
			lo, hi = layer, layer+1
		}
		hit := refHit{id: c.ID, pos: pos}
		g := 0
		for l := lo; l < hi; l++ {
			for hd := 0; hd < H; hd++ {
				if kind == format.ReprSignHash {
					qd := len(query) / ((hi - lo) * H)
					qv := make([]float64, qd)
					for i := range qv {
						qv[i] = float64(query[g*qd+i])
					}
					qc := refHash(qv, int(h.Param))
					best := math.MaxInt
					for row := 0; row < R; row++ {
						o := ((l*H+hd)*R + row) * D
						n := 0
						for i := 0; i < D*8; i++ {
							if (qc[i/8]>>(i%8))&1 != (r.Data[o+i/8]>>(i%8))&1 {
								n++
							}
						}
						best = min(best, n)
					}
					hit.dist += best
				} else {
					best := math.Inf(-1)
					for row := 0; row < R; row++ {
						o := ((l*H+hd)*R + row) * D
						s := 0.0
						for d := 0; d < D; d++ {
							s += float64(query[g*D+d]) * float64(refElem(r.Data, h.Dtype, o+d))
						}
						if s > best || math.IsNaN(s) {
							best = s
						}
					}
					hit.score += best
				}
				g++
			}
		}
		hits = append(hits, hit)
	}
	key := func(h refHit) float64 {
		if kind == format.ReprSignHash {
			return -float64(h.dist)
		}
		if math.IsNaN(h.score) {
			return math.Inf(-1)
		}
		return h.score
	}
	sort.SliceStable(hits, func(i, j int) bool {
		a, b := hits[i], hits[j]
		if key(a) != key(b) {
			return key(a) > key(b)
		}
		if c := bytes.Compare(a.id[:], b.id[:]); c != 0 {
			return c < 0
		}
		return a.pos < b.pos
	})
	return hits[:min(k, len(hits))], missing
}
