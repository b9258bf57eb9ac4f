package sparse

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"testing"
)

// TestDotKernels compares dot1 and dot4 with a float64 loop for lengths
// 1..70 and several strides, and checks that both give the same bits for
// the same row, with the Go and (when present) the assembly kernels.
func TestDotKernels(t *testing.T) {
	withGoKernels(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(31, 32))
		for n := 1; n <= 70; n++ {
			for _, extra := range []int{0, 1, 5, 16} {
				s := n + extra
				q := make([]float32, n)
				m := make([]float32, 3*s+n)
				for i := range q {
					q[i] = float32(rng.NormFloat64())
				}
				for i := range m {
					m[i] = float32(rng.NormFloat64())
				}
				four := dot4(q, m, s)
				for r := 0; r < 4; r++ {
					row := m[r*s : r*s+n]
					one := dot1(q, row)
					if math.Float32bits(one) != math.Float32bits(four[r]) {
						t.Fatalf("n %d stride %d row %d: dot1 %v, dot4 %v", n, s, r, one, four[r])
					}
					var want, mag float64
					for i := range q {
						want += float64(q[i]) * float64(row[i])
						mag += math.Abs(float64(q[i]) * float64(row[i]))
					}
					if math.Abs(float64(one)-want) > mag*1e-6 {
						t.Fatalf("n %d row %d: %v, want %v", n, r, one, want)
					}
				}
			}
		}
	})
}

func TestSumAVX(t *testing.T) {
	if !useAVX2 {
		t.Skip("no AVX2")
	}
	v := make([]float32, 32*7)
	want := float32(0)
	for i := range v {
		v[i] = float32(i % 5)
		want += v[i]
	}
	if got := sumAVX(&v[0], len(v)); got != want {
		t.Fatalf("sumAVX %v, want %v", got, want)
	}
}

func TestHammingAndCodes(t *testing.T) {
	rng := rand.New(rand.NewPCG(33, 34))
	for _, dim := range []int{1, 7, 8, 9, 16, 24, 72, 100} {
		a, b := make([]byte, 3*dim), make([]byte, 3*dim)
		for i := range a {
			a[i], b[i] = byte(rng.UintN(256)), byte(rng.UintN(256))
		}
		want := 0
		for i := range a {
			want += bits.OnesCount8(a[i] ^ b[i])
		}
		wpr := (dim + 7) / 8
		wa, wb := appendCodes(nil, a, dim, wpr), appendCodes(nil, b, dim, wpr)
		if len(wa) != 3*wpr {
			t.Fatalf("dim %d: %d words, want %d", dim, len(wa), 3*wpr)
		}
		if got := hamming(wa, wb); got != want {
			t.Fatalf("dim %d: hamming %d, want %d", dim, got, want)
		}
		if got := hammingGo(wa, wb); got != want {
			t.Fatalf("dim %d: hammingGo %d, want %d", dim, got, want)
		}
		if wa[0]&0xff != uint64(a[0]) {
			t.Fatalf("dim %d: byte 0 is not the low byte of word 0", dim)
		}
	}
}
