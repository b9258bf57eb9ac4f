package sparse

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// ProjectionSeed is the first PCG seed of the sign-hash projection; the
// second is the head dimension. It spells "ucmfs-sh" in ASCII.
const ProjectionSeed uint64 = 0x7563_6d66_732d_7368

// MaxHashBits bounds the sign-hash code length (param of kind 3) and
// MaxHashDim the vector length a projection is built for, so that one
// projection matrix stays within 16 MiB (32 MiB with its transpose).
const (
	MaxHashBits = 2048
	MaxHashDim  = 1024
)

// projection is a hashBits × dim matrix of unit rows, row-major; rows
// [j×dim, (j+1)×dim) are orthonormal. Rows of a longer projection extend
// those of a shorter one for the same dim.
type projection struct {
	dim, bits int
	rows      []float64
	cols      []float64 // rows transposed, [dim][bits], for hashSumsAVX
}

// newProjection builds the projection of docs/sparse.md: a PCG stream
// seeded (ProjectionSeed, dim) gives approximately Gaussian entries
// (Irwin-Hall: the sum of 12 uniforms in [0,1) minus 6), one row of dim
// entries at a time; each row is orthogonalised against the rows before
// it in its block of dim rows by two passes of modified Gram-Schmidt and
// normalised. Only IEEE additions, multiplications, divisions and square
// roots are used, each rounded on its own (the float64 conversions forbid
// fused multiply-adds), so the matrix is the same bit for bit on every
// platform.
func newProjection(dim, bits int) *projection {
	rng := rand.NewPCG(ProjectionSeed, uint64(dim))
	p := &projection{dim: dim, bits: bits, rows: make([]float64, bits*dim)}
	for i := 0; i < bits; i++ {
		v := p.rows[i*dim : (i+1)*dim]
		start := i / dim * dim
		for {
			for k := range v {
				v[k] = gaussian(rng)
			}
			for pass := 0; pass < 2; pass++ {
				for j := start; j < i; j++ {
					u := p.rows[j*dim : (j+1)*dim]
					c := dot64(v, u)
					for k := range v {
						v[k] -= float64(c * u[k])
					}
				}
			}
			norm := math.Sqrt(dot64(v, v))
			if norm > 1e-6 { // otherwise draw again (never seen in practice)
				for k := range v {
					v[k] /= norm
				}
				break
			}
		}
	}
	p.cols = make([]float64, bits*dim)
	for i := 0; i < bits; i++ {
		for k := 0; k < dim; k++ {
			p.cols[k*bits+i] = p.rows[i*dim+k]
		}
	}
	return p
}

// gaussian returns 12 uniforms in [0,1) from rng, summed, minus 6: mean 0,
// variance 1, within ±6.
func gaussian(rng *rand.PCG) float64 {
	s := 0.0
	for j := 0; j < 12; j++ {
		s += float64(rng.Uint64()>>11) * 0x1p-53
	}
	return s - 6
}

// dot64 is the sequential dot product of equal-length vectors, each
// product rounded before it is added.
func dot64(a, b []float64) float64 {
	b = b[:len(a)]
	s := 0.0
	for k := range a {
		s += float64(a[k] * b[k])
	}
	return s
}

// hash writes the sign-hash code of x (len dim) into code[:bits/8]: bit i
// (byte i/8, bit i%8 counting from the least significant) is 1 when the
// dot product of projection row i with x (dot64) is > 0. sums is scratch
// of at least bits values. With AVX2, hashSumsAVX computes the dot
// products sixteen rows at a time, with the same roundings.
func (p *projection) hash(code []byte, x, sums []float64) {
	code = code[:p.bits/8]
	clear(code)
	d := p.dim
	x = x[:d]
	sums = sums[:p.bits]
	if useAVX2 && p.bits%16 == 0 {
		hashSumsAVX(&p.cols[0], &x[0], d, p.bits, &sums[0])
	} else {
		// Four rows go through x together: each sum still runs in
		// element order, but the four do not wait on each other.
		for i := 0; i < p.bits; i += 4 { // bits is a multiple of 8
			r0 := p.rows[i*d : (i+1)*d]
			r1 := p.rows[(i+1)*d : (i+2)*d]
			r2 := p.rows[(i+2)*d : (i+3)*d]
			r3 := p.rows[(i+3)*d : (i+4)*d]
			var s0, s1, s2, s3 float64
			for k, v := range x {
				s0 += float64(r0[k] * v)
				s1 += float64(r1[k] * v)
				s2 += float64(r2[k] * v)
				s3 += float64(r3[k] * v)
			}
			sums[i], sums[i+1], sums[i+2], sums[i+3] = s0, s1, s2, s3
		}
	}
	for i, s := range sums {
		if s > 0 {
			code[i>>3] |= 1 << (i & 7)
		}
	}
}

// checkHashShape validates a sign-hash length and vector length.
func checkHashShape(dim, bits int) error {
	if bits <= 0 || bits%8 != 0 || bits > MaxHashBits {
		return fmt.Errorf("%w: hash_bits %d is not a positive multiple of 8 up to %d", ErrArgument, bits, MaxHashBits)
	}
	if dim <= 0 || dim > MaxHashDim {
		return fmt.Errorf("%w: vector length %d for sign-hash is outside 1..%d", ErrArgument, dim, MaxHashDim)
	}
	return nil
}

// SignHash appends to dst the sign-hash code of v, hashBits/8 bytes: the
// signs of the projection of docs/sparse.md for len(v) and hashBits,
// packed least significant bit first. A key block's kind-3 sidecar holds,
// per layer and head, SignHash of the mean key; Index.Search applies it to
// each query head.
func SignHash(dst []byte, v []float32, hashBits int) ([]byte, error) {
	if err := checkHashShape(len(v), hashBits); err != nil {
		return dst, err
	}
	x := make([]float64, len(v))
	for i, f := range v {
		x[i] = float64(f)
	}
	n := len(dst)
	dst = append(dst, make([]byte, hashBits/8)...)
	getProjection(len(v), hashBits).hash(dst[n:], x, make([]float64, hashBits))
	return dst, nil
}
