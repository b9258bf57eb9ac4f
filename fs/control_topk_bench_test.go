package fs

import (
	"context"
	"crypto/md5"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/sparse"
	"github.com/ucmfs/ucmfs/store"
	"github.com/ucmfs/ucmfs/tiers"
)

// Shape of BenchmarkTopK10k: 10 000 candidates whose stored kind-0
// sidecars hold one layer of 32 heads × 128 float32 values (16 KiB).
const (
	benchCands = 10_000
	benchHeads = 32
	benchDim   = 128
	benchK     = 64
)

// benchTopKStack is a memory-only stack holding benchCands tiny blocks
// (no shape stated) and, for each, an engine's kind-0 sidecar of random
// values; it returns the ids and the sidecar files.
func benchTopKStack(b *testing.B) (*tiers.Stack, []format.ID, [][]byte) {
	b.Helper()
	st, err := tiers.New(tiers.StackConfig{Logger: testLogger()}, tiers.MemConfig{Capacity: 1 << 30})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		st.Close(ctx)
	})
	r := rand.New(rand.NewPCG(10, 10))
	ids := make([]format.ID, benchCands)
	reprs := make([][]byte, benchCands)
	data := make([]byte, benchHeads*benchDim*4)
	for i := range ids {
		id := format.ID(md5.Sum([]byte(fmt.Sprintf("bench-topk/%d", i))))
		bh := format.BlockHeader{ID: id, NumLayers: 1, BlockSize: 1, Dtype: format.BFloat16}
		put(b, st, format.Key{Model: testModel, ID: id}, format.NewBlock(bh, make([]byte, 4)))
		for j := 0; j < len(data); j += 4 {
			binary.LittleEndian.PutUint32(data[j:], math.Float32bits(float32(r.NormFloat64())))
		}
		rh := format.ReprHeader{ID: id, Kind: format.ReprMean, Dtype: format.Float32, NumLayers: 1,
			NumKVHeads: benchHeads, Rows: 1, Dim: benchDim}
		reprs[i] = format.NewRepr(rh, data)
		put(b, st, format.Key{Model: testModel, ID: id, Kind: format.Repr}, reprs[i])
		ids[i] = id
	}
	return st, ids, reprs
}

// BenchmarkTopK10k ranks 10 000 candidates (32 heads × 128 dims, one
// layer, kind 0, k = 64) through MNT/.ucm/topk and in-process, each
// iteration timing in turn:
//
//   - control: the same request again on one session (its index reused:
//     the daemon checks each candidate's files and scans);
//   - control-rebuild: a request over the same candidates in another
//     order (the index is rebuilt from the mount's sidecar cache);
//   - control-cold: the same on a mount of the same stack without a
//     sidecar cache (every sidecar read from the memory tier);
//   - sparse-topk: sparse.TopK over the sidecar files in memory (build
//     and search, the in-process baseline);
//   - sparse-search: Index.Search of an index built once (the scan alone).
//
// Every answer is checked against sparse.TopK's. Custom metrics are the
// milliseconds of each per iteration.
func BenchmarkTopK10k(b *testing.B) {
	requireFUSE(b)
	st, ids, reprs := benchTopKStack(b)
	m := newMountWith(b, st, Options{Passthrough: true})
	cold := newMountWith(b, st, Options{Passthrough: true}, store.Options{ReprCache: -1})
	q := randomQuery(rand.New(rand.NewPCG(11, 11)), benchHeads*benchDim)
	cands := make([]sparse.Candidate, len(ids))
	for i := range ids {
		cands[i] = sparse.Candidate{ID: ids[i], Repr: reprs[i]}
	}
	want := refTopK(b, format.ReprMean, 0, cands, q, benchK)
	other := slices.Clone(ids)
	other[0], other[1] = other[1], other[0]
	lines := [2]string{
		topkLine(testModel, "mean", "0", benchK, benchHeads, benchDim, q, ids),
		topkLine(testModel, "mean", "0", benchK, benchHeads, benchDim, q, other),
	}
	warm, rebuild, coldCtl := openCtl(b, m, "topk"), openCtl(b, m, "topk"), openCtl(b, cold, "topk")
	for _, c := range []*ctl{warm, rebuild, coldCtl} {
		if got := c.ask(lines[0]); got != want {
			b.Fatalf("answer differs from sparse.TopK\n got %.200s\nwant %.200s", got, want)
		}
	}
	bl, err := sparse.NewBuilder(format.ReprMean, 0)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range cands {
		if err := bl.Add(c.ID, c.Repr); err != nil {
			b.Fatal(err)
		}
	}
	idx := bl.Index()
	var times [5]time.Duration
	timed := func(i int, fn func()) {
		start := time.Now()
		fn()
		times[i] += time.Since(start)
	}
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		timed(0, func() { mustAnswer(b, warm, lines[0], want) })
		timed(1, func() { mustAnswer(b, rebuild, lines[(n+1)%2], want) })
		timed(2, func() { mustAnswer(b, coldCtl, lines[n%2], want) })
		timed(3, func() {
			if _, err := sparse.TopK(format.ReprMean, 0, cands, q, benchK); err != nil {
				b.Fatal(err)
			}
		})
		timed(4, func() {
			if _, err := idx.Search(q, benchK); err != nil {
				b.Fatal(err)
			}
		})
	}
	for i, name := range []string{"control", "control-rebuild", "control-cold", "sparse-topk", "sparse-search"} {
		b.ReportMetric(float64(times[i].Microseconds())/1e3/float64(b.N), name+"-ms")
	}
	b.ReportMetric(float64(times[3])/float64(times[0]), "topk/control")
}

// mustAnswer asks and checks the answer.
func mustAnswer(b *testing.B, c *ctl, line, want string) {
	if got := c.ask(line); got != want {
		b.Fatalf("answer differs from sparse.TopK\n got %.200s\nwant %.200s", got, want)
	}
}
