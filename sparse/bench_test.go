package sparse

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ucmfs/ucmfs/format"
)

// Benchmarks, each beside its baseline measured in the same run:
//
//   - Derive: throughput in bytes of block read (the whole block, K and V,
//     although only K is read), beside BenchmarkDeriveBaseline, which
//     copies the K tensors of the same block, and converts them to float32.
//   - TopK over 10k and 100k candidates of 32 heads × 128 dims, one layer
//     (16 KiB per candidate): Index.Search, a naive loop, and plain sums of
//     the same matrix with the same parallelism (unrolled Go, and AVX2:
//     the memory-bandwidth limit). BenchmarkTopKVsBandwidth alternates
//     Search and the AVX2 sum within each iteration and reports the ratio.
//   - Hamming top-k (kind 3, 128-bit codes) over the same candidate counts.
//
// Each reports candidates/s (cand/s) where it ranks candidates.

const (
	benchHeads = 32
	benchDim   = 128
	benchK     = 64
)

var benchBlocks = []shape{
	{L: 32, T: 2, B: 16, H: 8, D: 128, dt: format.Float32},
	{L: 32, T: 2, B: 16, H: 8, D: 128, dt: format.BFloat16},
	{L: 8, T: 2, B: 128, H: 32, D: 128, dt: format.BFloat16},
}

func blockName(s shape) string { return fmt.Sprintf("%s_L%d_B%d_H%d", s.dt, s.L, s.B, s.H) }

func BenchmarkDerive(b *testing.B) {
	for _, s := range benchBlocks {
		block := randBlock(rand.New(rand.NewPCG(1, 1)), s)
		for _, kind := range []format.ReprKind{format.ReprMean, format.ReprMax, format.ReprMerged, format.ReprSignHash} {
			b.Run(blockName(s)+"/"+kind.String(), func(b *testing.B) {
				dst := make([]byte, 0, len(block))
				b.SetBytes(int64(len(block)))
				for b.Loop() {
					if _, err := AppendDerive(dst, block, kind, 0); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkDeriveBaseline reads the K tensors of the same blocks: kcopy
// copies them (memmove: reading the bytes once), kdecode converts them to
// float32 (the least work of any derivation).
func BenchmarkDeriveBaseline(b *testing.B) {
	for _, s := range benchBlocks {
		block := randBlock(rand.New(rand.NewPCG(1, 1)), s)
		bh, _ := format.DecodeBlockHeader(block)
		kb := int(bh.TensorBytes())
		b.Run(blockName(s)+"/kcopy", func(b *testing.B) {
			buf := make([]byte, kb)
			b.SetBytes(int64(len(block)))
			for b.Loop() {
				for l := 0; l < s.L; l++ {
					copy(buf, block[bh.TensorOffset(l, 0):][:kb])
				}
			}
		})
		b.Run(blockName(s)+"/kdecode", func(b *testing.B) {
			row := make([]float32, kb/s.dt.Size())
			b.SetBytes(int64(len(block)))
			for b.Loop() {
				for l := 0; l < s.L; l++ {
					decodeFloats(row, block[bh.TensorOffset(l, 0):][:kb], s.dt)
				}
			}
		})
	}
}

var benchSink float32

// cpuHasAVX2 is whether sumAVX can run, whatever useAVX2 is set to.
var cpuHasAVX2 = useAVX2

// benchIndexes caches the indexes of the top-k benchmarks (the 100k one
// holds 1.6 GB).
var benchIndexes sync.Map // string -> *Index

// benchIndex builds, through Builder.Add, an index of n candidates of
// kind with rows vectors per head, values from a fast generator.
func benchIndex(b *testing.B, kind format.ReprKind, n, rows int) *Index {
	key := fmt.Sprintf("%s/%d/%d", kind, n, rows)
	if x, ok := benchIndexes.Load(key); ok {
		return x.(*Index)
	}
	h := format.ReprHeader{Kind: kind, Dtype: format.Float32, NumLayers: 1, NumKVHeads: benchHeads,
		Rows: uint32(rows), Dim: benchDim, Param: uint32(benchDim) / uint32(rows)}
	if kind == format.ReprSignHash {
		h.Dtype, h.Dim, h.Param = format.Uint8, 16, 128
	}
	if rows == 1 && kind != format.ReprMerged {
		h.Param = h.Param &^ h.Param
		if kind == format.ReprSignHash {
			h.Param = 128
		}
	}
	size, _ := h.PayloadSize()
	file := make([]byte, format.HeaderSize+int(size))
	bl, err := NewBuilder(kind, 0)
	if err != nil {
		b.Fatal(err)
	}
	state := uint64(12345)
	for c := 0; c < n; c++ {
		binary.BigEndian.PutUint64(h.ID[:], uint64(c)*0x9e3779b97f4a7c15)
		payload := file[format.HeaderSize:]
		for i := 0; i+4 <= len(payload); i += 4 {
			state = state*6364136223846793005 + 1442695040888963407
			v := uint32(state >> 32)
			if kind != format.ReprSignHash {
				v = math.Float32bits(float32(int32(v)>>8) * 0x1p-23)
			}
			binary.LittleEndian.PutUint32(payload[i:], v)
		}
		h.PayloadCRC, h.Flags = format.CRC32C(payload), format.FlagCRC
		h.Encode(file)
		if err := bl.Add(h.ID, file); err != nil {
			b.Fatal(err)
		}
		if c == 0 {
			bl.Grow(n - 1)
		}
	}
	x := bl.Index()
	benchIndexes.Store(key, x)
	return x
}

func benchQuery() []float32 {
	q := make([]float32, benchHeads*benchDim)
	rng := rand.New(rand.NewPCG(2, 2))
	for i := range q {
		q[i] = float32(rng.NormFloat64())
	}
	return q
}

// reportScan reports candidates/s; SetBytes gives the matrix GB/s.
func reportScan(b *testing.B, n int) {
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "cand/s")
}

var benchCounts = []int{10_000, 100_000}

func BenchmarkTopK(b *testing.B) {
	for _, n := range benchCounts {
		b.Run(fmt.Sprintf("mean/n=%d", n), func(b *testing.B) {
			x := benchIndex(b, format.ReprMean, n, 1)
			q := benchQuery()
			b.SetBytes(int64(4 * len(x.data)))
			for b.Loop() {
				if _, err := x.Search(q, benchK); err != nil {
					b.Fatal(err)
				}
			}
			reportScan(b, n)
		})
	}
	// Kind 2 with 4 rows per head: 2,500 candidates hold the same bytes
	// as 10,000 of kind 0.
	b.Run("merged4/n=2500", func(b *testing.B) {
		x := benchIndex(b, format.ReprMerged, 2500, 4)
		q := benchQuery()
		b.SetBytes(int64(4 * len(x.data)))
		for b.Loop() {
			if _, err := x.Search(q, benchK); err != nil {
				b.Fatal(err)
			}
		}
		reportScan(b, 2500)
	})
}

// BenchmarkTopKNaive is the naive loop: one goroutine, nested loops over
// candidates, heads and dims, then a sort of all scores.
func BenchmarkTopKNaive(b *testing.B) {
	for _, n := range benchCounts {
		b.Run(fmt.Sprintf("mean/n=%d", n), func(b *testing.B) {
			x := benchIndex(b, format.ReprMean, n, 1)
			q := benchQuery()
			type scored struct {
				s float32
				c int
			}
			all := make([]scored, n)
			b.SetBytes(int64(4 * len(x.data)))
			for b.Loop() {
				for c := 0; c < n; c++ {
					var s float32
					for h := 0; h < benchHeads; h++ {
						for d := 0; d < benchDim; d++ {
							s += q[h*benchDim+d] * x.data[c*x.stride+h*benchDim+d]
						}
					}
					all[c] = scored{s, c}
				}
				slices.SortFunc(all, func(a, b scored) int {
					if a.s > b.s {
						return -1
					}
					if a.s < b.s {
						return 1
					}
					return 0
				})
			}
			reportScan(b, n)
		})
	}
}

// sumGo is the plain unrolled sum of the baseline.
func sumGo(a []float32) float32 {
	var s0, s1, s2, s3, s4, s5, s6, s7 float32
	for len(a) >= 8 {
		v := a[:8:8]
		s0 += v[0]
		s1 += v[1]
		s2 += v[2]
		s3 += v[3]
		s4 += v[4]
		s5 += v[5]
		s6 += v[6]
		s7 += v[7]
		a = a[8:]
	}
	for _, v := range a {
		s0 += v
	}
	return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))
}

// parallelSum sums data on GOMAXPROCS goroutines, as Search splits it.
func parallelSum(data []float32, avx bool) float32 {
	w := runtime.GOMAXPROCS(0)
	part := make([]float32, w)
	var wg sync.WaitGroup
	for i := 0; i < w; i++ {
		lo, hi := len(data)*i/w&^31, len(data)*(i+1)/w&^31
		if i == w-1 {
			hi = len(data)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if avx && hi-lo >= 32 {
				n := (hi - lo) &^ 31
				part[i] = sumAVX(&data[lo], n) + sumGo(data[lo+n:hi])
				return
			}
			part[i] = sumGo(data[lo:hi])
		}()
	}
	wg.Wait()
	var s float32
	for _, v := range part {
		s += v
	}
	return s
}

// BenchmarkTopKBaselineSum sums the matrix of BenchmarkTopK with the same
// parallelism: plain unrolled Go, and AVX2 (the memory-bandwidth limit).
func BenchmarkTopKBaselineSum(b *testing.B) {
	for _, n := range benchCounts {
		for _, avx := range []bool{false, true} {
			if avx && !cpuHasAVX2 {
				continue
			}
			name := "go"
			if avx {
				name = "avx2"
			}
			b.Run(fmt.Sprintf("%s/n=%d", name, n), func(b *testing.B) {
				x := benchIndex(b, format.ReprMean, n, 1)
				b.SetBytes(int64(4 * len(x.data)))
				for b.Loop() {
					benchSink = parallelSum(x.data, avx)
				}
				reportScan(b, n)
			})
		}
	}
}

// BenchmarkTopKVsBandwidth alternates Search and the parallel sums of the
// same matrix in every iteration, so that the machine's load hits both
// alike, and reports Search's GB/s, the sums' GB/s and the ratios.
//
// The go-kernels runs turn the assembly kernels off: the portable path.
func BenchmarkTopKVsBandwidth(b *testing.B) {
	for _, n := range benchCounts {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) { benchVsBandwidth(b, n) })
		if cpuHasAVX2 {
			b.Run(fmt.Sprintf("go-kernels/n=%d", n), func(b *testing.B) {
				useAVX2 = false
				defer func() { useAVX2 = true }()
				benchVsBandwidth(b, n)
			})
		}
	}
}

func benchVsBandwidth(b *testing.B, n int) {
	x := benchIndex(b, format.ReprMean, n, 1)
	q := benchQuery()
	var search, sumG, sumA time.Duration
	for b.Loop() {
		t0 := time.Now()
		if _, err := x.Search(q, benchK); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		benchSink = parallelSum(x.data, false)
		t2 := time.Now()
		if cpuHasAVX2 {
			benchSink = parallelSum(x.data, true)
		}
		search, sumG, sumA = search+t1.Sub(t0), sumG+t2.Sub(t1), sumA+time.Since(t2)
	}
	gb := float64(4*len(x.data)) * float64(b.N) / 1e9
	b.ReportMetric(gb/search.Seconds(), "search-GB/s")
	b.ReportMetric(gb/sumG.Seconds(), "gosum-GB/s")
	b.ReportMetric(sumG.Seconds()/search.Seconds(), "ratio-vs-gosum")
	if cpuHasAVX2 {
		b.ReportMetric(gb/sumA.Seconds(), "avx2sum-GB/s")
		b.ReportMetric(sumA.Seconds()/search.Seconds(), "ratio-vs-avx2sum")
	}
}

// BenchmarkTopKHamming ranks 128-bit sign-hash codes of 32 heads: Search
// (hashing the float query first) and SearchCodes (codes given).
func BenchmarkTopKHamming(b *testing.B) {
	for _, n := range benchCounts {
		x := benchIndex(b, format.ReprSignHash, n, 1)
		q := benchQuery()
		codes := make([]byte, 0, benchHeads*16)
		for h := 0; h < benchHeads; h++ {
			codes, _ = SignHash(codes, q[h*benchDim:(h+1)*benchDim], 128)
		}
		b.Run(fmt.Sprintf("search/n=%d", n), func(b *testing.B) {
			b.SetBytes(int64(8 * len(x.codes)))
			for b.Loop() {
				if _, err := x.Search(q, benchK); err != nil {
					b.Fatal(err)
				}
			}
			reportScan(b, n)
		})
		b.Run(fmt.Sprintf("codes/n=%d", n), func(b *testing.B) {
			b.SetBytes(int64(8 * len(x.codes)))
			for b.Loop() {
				if _, err := x.SearchCodes(codes, benchK); err != nil {
					b.Fatal(err)
				}
			}
			reportScan(b, n)
		})
	}
}

// BenchmarkHammingVsMean alternates, in every iteration, a kind-0 Search
// and kind-3 searches over the same number of candidates and reports the
// candidates/s of each and their ratios.
func BenchmarkHammingVsMean(b *testing.B) {
	for _, n := range benchCounts {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			xm := benchIndex(b, format.ReprMean, n, 1)
			xs := benchIndex(b, format.ReprSignHash, n, 1)
			q := benchQuery()
			codes := make([]byte, 0, benchHeads*16)
			for h := 0; h < benchHeads; h++ {
				codes, _ = SignHash(codes, q[h*benchDim:(h+1)*benchDim], 128)
			}
			var mean, search, bycode time.Duration
			for b.Loop() {
				t0 := time.Now()
				_, err1 := xm.Search(q, benchK)
				t1 := time.Now()
				_, err2 := xs.Search(q, benchK)
				t2 := time.Now()
				_, err3 := xs.SearchCodes(codes, benchK)
				if err1 != nil || err2 != nil || err3 != nil {
					b.Fatal(err1, err2, err3)
				}
				mean, search, bycode = mean+t1.Sub(t0), search+t2.Sub(t1), bycode+time.Since(t2)
			}
			c := float64(n) * float64(b.N)
			b.ReportMetric(c/mean.Seconds(), "mean-cand/s")
			b.ReportMetric(c/search.Seconds(), "hamming-cand/s")
			b.ReportMetric(c/bycode.Seconds(), "hamming-codes-cand/s")
			b.ReportMetric(mean.Seconds()/search.Seconds(), "ratio-search")
			b.ReportMetric(mean.Seconds()/bycode.Seconds(), "ratio-codes")
		})
	}
}
