package integration

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/sparse"
)

// Shape of BenchmarkControlTopK: 10 000 candidates with kind-0 sidecars
// of one layer of 32 heads × 128 float32 values (16 KiB each), k = 64.
const (
	topkCands = 10_000
	topkHeads = 32
	topkDim   = 128
	topkK     = 64
)

// BenchmarkControlTopK ranks 10 000 candidates through MNT/.ucm/topk of
// the real daemon, a separate process (the engine's sidecars written
// through the mount), against sparse.TopK in this process over the same
// sidecar files; each iteration times in turn: the same request again on
// one session (its index reused), a request over the candidates in
// another order on a second session (the index rebuilt from the daemon's
// cache), sparse.TopK (build and search), and Index.Search of an index
// built once. Every answer is checked against sparse.TopK's.
func BenchmarkControlTopK(b *testing.B) {
	d := mountUCM(b, mountOpts{Bare: true, Args: []string{"--memory", "1GiB", "--memory-dir", memDir,
		"--memory-only", "--log-level", "warn", "--repr-kind", "none"}})
	const model = "org--TopK-Bench"
	if err := os.Mkdir(d.path(model), 0o755); err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(21, 21))
	ids := testIDs("bench-topk", topkCands)
	cands := make([]sparse.Candidate, len(ids))
	data := make([]byte, topkHeads*topkDim*4)
	for i, id := range ids {
		bid, _ := format.ParseID(id)
		block := format.NewBlock(format.BlockHeader{ID: bid, NumLayers: 1, BlockSize: 1, Dtype: format.Uint8}, make([]byte, 64))
		if err := writeVerdict(blockPath(d.Mnt, model, id), block); err != nil {
			b.Fatal(err)
		}
		for j := 0; j < len(data); j += 4 {
			binary.LittleEndian.PutUint32(data[j:], math.Float32bits(float32(r.NormFloat64())))
		}
		repr := format.NewRepr(format.ReprHeader{ID: bid, Kind: format.ReprMean, Dtype: format.Float32,
			NumLayers: 1, NumKVHeads: topkHeads, Rows: 1, Dim: topkDim}, data)
		if err := writeVerdict(strings.TrimSuffix(blockPath(d.Mnt, model, id), ".bin")+".repr", repr); err != nil {
			b.Fatal(err)
		}
		cands[i] = sparse.Candidate{ID: bid, Repr: repr}
	}
	q := make([]float32, topkHeads*topkDim)
	qb := make([]byte, 4*len(q))
	for i := range q {
		q[i] = float32(r.NormFloat64())
		binary.LittleEndian.PutUint32(qb[4*i:], math.Float32bits(q[i]))
	}
	res, err := sparse.TopK(format.ReprMean, 0, cands, q, topkK)
	if err != nil {
		b.Fatal(err)
	}
	want := fmt.Sprintf("ok n=%d missing=0", len(res.Hits))
	for _, h := range res.Hits {
		want += " " + h.ID.String() + ":" + strconv.FormatFloat(float64(h.Score), 'g', -1, 32)
	}
	want += "\n"
	other := slices.Clone(ids)
	other[0], other[1] = other[1], other[0]
	head := fmt.Sprintf("topk %s kind=mean layer=0 k=%d heads=%d dim=%d q=%s ", model, topkK, topkHeads, topkDim,
		base64.StdEncoding.EncodeToString(qb))
	lines := [2]string{head + strings.Join(ids, " ") + "\n", head + strings.Join(other, " ") + "\n"}
	openSession := func() *os.File {
		f, err := os.OpenFile(d.path(".ucm", "topk"), os.O_RDWR, 0)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { f.Close() })
		return f
	}
	buf := make([]byte, 64<<10)
	ask := func(f *os.File, line string) {
		if _, err := io.WriteString(f, line); err != nil {
			b.Fatal(err)
		}
		n, err := f.Read(buf)
		if err != nil || string(buf[:n]) != want {
			b.Fatalf("answer %.200q (%v), want %.200q", buf[:n], err, want)
		}
	}
	reuse, rebuild := openSession(), openSession()
	ask(reuse, lines[0])
	ask(rebuild, lines[0])
	bl, _ := sparse.NewBuilder(format.ReprMean, 0)
	for _, c := range cands {
		bl.Add(c.ID, c.Repr)
	}
	idx := bl.Index()
	var times [4]time.Duration
	timed := func(i int, fn func()) {
		start := time.Now()
		fn()
		times[i] += time.Since(start)
	}
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		timed(0, func() { ask(reuse, lines[0]) })
		timed(1, func() { ask(rebuild, lines[(n+1)%2]) })
		timed(2, func() { sparse.TopK(format.ReprMean, 0, cands, q, topkK) })
		timed(3, func() { idx.Search(q, topkK) })
	}
	for i, name := range []string{"control", "control-rebuild", "sparse-topk", "sparse-search"} {
		b.ReportMetric(float64(times[i].Microseconds())/1e3/float64(b.N), name+"-ms")
	}
	b.ReportMetric(float64(times[2])/float64(times[0]), "topk/control")
}
