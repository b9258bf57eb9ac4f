package sparse

import (
	"encoding/hex"
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

func TestProjectionOrthonormal(t *testing.T) {
	for _, c := range []struct{ dim, bits int }{{128, 128}, {64, 200}, {8, 64}, {576, 256}, {1, 16}} {
		p := newProjection(c.dim, c.bits)
		for i := 0; i < c.bits; i++ {
			ri := p.rows[i*c.dim : (i+1)*c.dim]
			if n := dot64(ri, ri); math.Abs(n-1) > 1e-12 {
				t.Fatalf("dim %d bits %d: row %d has norm² %v", c.dim, c.bits, i, n)
			}
			for j := i / c.dim * c.dim; j < i; j++ {
				if d := dot64(ri, p.rows[j*c.dim:(j+1)*c.dim]); math.Abs(d) > 1e-12 {
					t.Fatalf("dim %d bits %d: rows %d and %d have dot %v", c.dim, c.bits, i, j, d)
				}
			}
		}
	}
}

// TestProjectionStable pins the projection and a code: a change here
// changes every stored sign-hash sidecar. The golden values were computed
// by the independent Python transcription of docs/sparse.md.
func TestProjectionStable(t *testing.T) {
	short, long := newProjection(16, 16), newProjection(16, 48)
	for i, v := range short.rows {
		if math.Float64bits(v) != math.Float64bits(long.rows[i]) {
			t.Fatalf("the 48-bit projection does not extend the 16-bit one at %d", i)
		}
	}
	if again := newProjection(16, 48); !equalBits(again.rows, long.rows) {
		t.Fatal("projection is not deterministic")
	}
	p := getProjection(128, 128)
	golden := map[int]uint64{0: 0x3fc2b7a08719ae65, 1: 0x3fa9270c669df580, 127*128 + 127: 0xbfae38dee50bc420}
	for i, want := range golden {
		if got := math.Float64bits(p.rows[i]); got != want {
			t.Errorf("projection(128,128) element %d: %#016x, want %#016x", i, got, want)
		}
	}
	v := make([]float32, 128)
	for i := range v {
		v[i] = float32(i%7) - 3
	}
	withGoKernels(t, func(t *testing.T) {
		code, err := SignHash(nil, v, 128)
		if err != nil {
			t.Fatal(err)
		}
		if got := hex.EncodeToString(code); got != "07a0edf4d7955c8b885b0be8cedc1455" {
			t.Errorf("SignHash golden code is %s", got)
		}
	})
}

// TestHashKernels: the AVX2 and Go projections give the same sums, bit
// for bit, as dot64 row by row.
func TestHashKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(35, 36))
	for _, c := range []struct{ dim, bits int }{{128, 128}, {64, 256}, {7, 16}, {12, 24}, {576, 64}} {
		p := getProjection(c.dim, c.bits)
		x := make([]float64, c.dim)
		for i := range x {
			x[i] = rng.NormFloat64()
		}
		want := make([]byte, c.bits/8)
		for i := 0; i < c.bits; i++ {
			if dot64(p.rows[i*c.dim:(i+1)*c.dim], x) > 0 {
				want[i/8] |= 1 << (i % 8)
			}
		}
		withGoKernels(t, func(t *testing.T) {
			code := make([]byte, c.bits/8)
			p.hash(code, x, make([]float64, c.bits))
			if string(code) != string(want) {
				t.Fatalf("dim %d bits %d: %x, want %x", c.dim, c.bits, code, want)
			}
		})
	}
}

func equalBits(a, b []float64) bool {
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return false
		}
	}
	return len(a) == len(b)
}

// TestSignHashBitOrder checks bit i of the code is byte i/8, bit i%8 from
// the least significant, and is 1 when the projection is positive.
func TestSignHashBitOrder(t *testing.T) {
	const dim, bits = 16, 32
	p := getProjection(dim, bits)
	for i := 0; i < bits; i++ {
		v := make([]float32, dim)
		for k := range v {
			v[k] = float32(p.rows[i*dim+k])
		}
		code, err := SignHash(nil, v, bits)
		if err != nil {
			t.Fatal(err)
		}
		if code[i/8]>>(i%8)&1 != 1 {
			t.Fatalf("row %d: bit %d of %x is 0", i, i, code)
		}
		for k := range v {
			v[k] = -v[k]
		}
		code, _ = SignHash(code[:0], v, bits)
		if code[i/8]>>(i%8)&1 != 0 {
			t.Fatalf("minus row %d: bit %d of %x is 1", i, i, code)
		}
	}
	zero, _ := SignHash(nil, make([]float32, dim), bits)
	if string(zero) != string(make([]byte, bits/8)) {
		t.Fatalf("the zero vector hashes to %x", zero)
	}
}

func TestSignHashErrors(t *testing.T) {
	for _, c := range []struct{ dim, bits int }{{0, 8}, {4, 0}, {4, 12}, {4, MaxHashBits + 8}, {MaxHashDim + 1, 8}} {
		if _, err := SignHash(nil, make([]float32, c.dim), c.bits); !errors.Is(err, ErrArgument) {
			t.Errorf("dim %d bits %d: %v, want ErrArgument", c.dim, c.bits, err)
		}
	}
}
