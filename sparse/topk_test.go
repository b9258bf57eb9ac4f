package sparse

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/ucmfs/ucmfs/format"
)

// searchAll runs the search with 1 to 4 workers (every range a goroutine
// of its own) and checks they agree bit for bit.
func searchAll(t *testing.T, x *Index, query []float32, k int) Result {
	t.Helper()
	saved := minWorkerBytes
	defer func() { minWorkerBytes = saved }()
	minWorkerBytes = 1
	var first Result
	for w := 1; w <= 4; w++ {
		x.SetWorkers(w)
		res, err := x.Search(query, k)
		if err != nil {
			t.Fatalf("workers %d: %v", w, err)
		}
		if w == 1 {
			first = res
			continue
		}
		if !slices.Equal(res.Hits, first.Hits) || !slices.Equal(res.Missing, first.Missing) {
			t.Fatalf("workers %d: hits differ from one worker's", w)
		}
	}
	return first
}

// derivedCandidates derives kind/param sidecars from n random blocks of
// shape s (dtype varying), every missingEvery-th one left without.
func derivedCandidates(t *testing.T, rng *rand.Rand, s shape, n, missingEvery int, kind format.ReprKind, param uint32) []Candidate {
	dts := []format.Dtype{format.Float32, format.BFloat16, format.Float16}
	cands := make([]Candidate, n)
	for i := range cands {
		s.dt = dts[i%3]
		block := randBlock(rng, s)
		bh, _ := format.DecodeBlockHeader(block)
		cands[i].ID = bh.ID
		if i%missingEvery != missingEvery-1 {
			cands[i].Repr = mustDerive(t, block, kind, param)
		}
	}
	return cands
}

func TestTopKMatchesReference(t *testing.T) {
	withGoKernels(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(21, 22))
		s := shape{L: 3, T: 2, B: 11, H: 3, D: 20}
		for _, kp := range []struct {
			kind  format.ReprKind
			param uint32
		}{{format.ReprMean, 0}, {format.ReprMax, 0}, {format.ReprMerged, 3}, {format.ReprMerged, 2},
			{format.ReprMerged, 11}, {format.ReprSignHash, 64}, {format.ReprSignHash, 24}} {
			cands := derivedCandidates(t, rng, s, 45, 7, kp.kind, kp.param)
			for _, layer := range []int{0, 2, AllLayers} {
				for _, k := range []int{1, 5, 38, 100} {
					t.Run(fmt.Sprintf("%s-%d-layer%d-k%d", kp.kind, kp.param, layer, k), func(t *testing.T) {
						layers := 1
						if layer == AllLayers {
							layers = s.L
						}
						query := make([]float32, layers*s.H*s.D)
						for i := range query {
							query[i] = float32(rng.NormFloat64())
						}
						b, _ := NewBuilder(kp.kind, layer)
						for _, c := range cands {
							if err := b.Add(c.ID, c.Repr); err != nil {
								t.Fatal(err)
							}
						}
						got := searchAll(t, b.Index(), query, k)
						want, missing := refTopK(kp.kind, layer, cands, query, k)
						compareHits(t, kp.kind, got, want, missing, cands, layer, query)
					})
				}
			}
		}
	})
}

// compareHits checks got against the reference ranking: exact for kind 3;
// for kinds 0-2 every score within float32 rounding of the reference and
// the order that of the reference up to scores that close.
func compareHits(t *testing.T, kind format.ReprKind, got Result, want []refHit, missing []format.ID, cands []Candidate, layer int, query []float32) {
	t.Helper()
	if !slices.Equal(got.Missing, missing) {
		t.Fatalf("missing %v, want %v", got.Missing, missing)
	}
	if len(got.Hits) != len(want) {
		t.Fatalf("%d hits, want %d", len(got.Hits), len(want))
	}
	if kind == format.ReprSignHash {
		for i, h := range got.Hits {
			if h.ID != want[i].id || h.Pos != want[i].pos || h.Distance != want[i].dist {
				t.Fatalf("hit %d: %x pos %d distance %d, want %x pos %d distance %d", i, h.ID, h.Pos, h.Distance, want[i].id, want[i].pos, want[i].dist)
			}
		}
		return
	}
	all, _ := refTopK(kind, layer, cands, query, len(cands))
	refScore := map[int]float64{}
	for _, r := range all {
		refScore[r.pos] = r.score
	}
	const tol = 1e-4
	for i, h := range got.Hits {
		if cands[h.Pos].ID != h.ID {
			t.Fatalf("hit %d: pos %d is not id %x", i, h.Pos, h.ID)
		}
		rs := refScore[h.Pos]
		if math.Abs(float64(h.Score)-rs) > tol || math.Abs(rs-want[i].score) > tol {
			t.Fatalf("hit %d: %x score %v (reference %v), reference hit %d scores %v", i, h.ID, h.Score, rs, i, want[i].score)
		}
		if i > 0 {
			p := got.Hits[i-1]
			if p.Score < h.Score || p.Score == h.Score && bytes.Compare(p.ID[:], h.ID[:]) > 0 {
				t.Fatalf("hits %d and %d out of order: %v %x, %v %x", i-1, i, p.Score, p.ID, h.Score, h.ID)
			}
		}
	}
}

// TestTopKExactTies uses small integers, whose sums are exact in float32
// whatever the order, so the ranking must equal the reference exactly,
// ties included: identical sidecars under shuffled ids, and one id twice.
func TestTopKExactTies(t *testing.T) {
	withGoKernels(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(23, 24))
		const L, H, D = 2, 4, 33
		for _, kp := range []struct {
			kind format.ReprKind
			rows int
		}{{format.ReprMean, 1}, {format.ReprMax, 1}, {format.ReprMerged, 5}, {format.ReprMerged, 4}, {format.ReprSignHash, 3}} {
			var cands []Candidate
			protos := make([][]float32, 6)
			for i := range protos {
				protos[i] = make([]float32, L*H*kp.rows*D)
				for j := range protos[i] {
					protos[i][j] = float32(int(rng.UintN(5)) - 2)
				}
			}
			var dup format.ID
			for i := 0; i < 40; i++ {
				id := randID(rng)
				if i == 0 {
					dup = id
				}
				if i == 39 || i == 20 {
					id = dup
				}
				v := protos[rng.IntN(len(protos))]
				var repr []byte
				if kp.kind == format.ReprSignHash {
					code := make([]byte, len(v))
					for j, f := range v {
						code[j] = byte(int(f) * 37)
					}
					repr = format.NewRepr(format.ReprHeader{ID: id, Kind: kp.kind, Dtype: format.Uint8, NumLayers: L,
						NumKVHeads: H, Rows: uint32(kp.rows), Dim: D, Param: 8 * D}, code)
				} else {
					repr = floatRepr(id, kp.kind, L, H, kp.rows, D, uint32(kp.rows-1)*2, v)
				}
				cands = append(cands, Candidate{ID: id, Repr: repr})
			}
			query := make([]float32, L*H*D)
			for i := range query {
				query[i] = float32(int(rng.UintN(5)) - 2)
			}
			for _, layer := range []int{1, AllLayers} {
				b, _ := NewBuilder(kp.kind, layer)
				for _, c := range cands {
					if err := b.Add(c.ID, c.Repr); err != nil {
						t.Fatal(err)
					}
				}
				q := query
				if layer != AllLayers {
					q = query[:H*D]
				}
				got := searchAll(t, b.Index(), q, len(cands))
				want, _ := refTopK(kp.kind, layer, cands, q, len(cands))
				ties := 0
				for i, h := range got.Hits {
					w := want[i]
					if h.ID != w.id || h.Pos != w.pos || h.Distance != w.dist || (kp.kind != format.ReprSignHash && float64(h.Score) != w.score) {
						t.Fatalf("%s layer %d hit %d: %x pos %d score %v dist %d, want %x pos %d score %v dist %d",
							kp.kind, layer, i, h.ID, h.Pos, h.Score, h.Distance, w.id, w.pos, w.score, w.dist)
					}
					if i > 0 && h.Score == got.Hits[i-1].Score && h.Distance == got.Hits[i-1].Distance {
						ties++
						if c := bytes.Compare(got.Hits[i-1].ID[:], h.ID[:]); c > 0 || c == 0 && got.Hits[i-1].Pos > h.Pos {
							t.Fatalf("%s: tied hits %d and %d not in id order", kp.kind, i-1, i)
						}
					}
				}
				if ties < 20 {
					t.Fatalf("%s: only %d ties; the test meant to build many", kp.kind, ties)
				}
			}
		}
	})
}

func TestTopKMissing(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 26))
	ids := []format.ID{randID(rng), randID(rng), randID(rng), randID(rng)}
	cands := []Candidate{{ID: ids[0]}, {ID: ids[1], Repr: floatRepr(ids[1], format.ReprMean, 1, 1, 1, 2, 0, []float32{1, 2})},
		{ID: ids[2], Repr: []byte{}}, {ID: ids[3], Repr: floatRepr(ids[3], format.ReprMean, 1, 1, 1, 2, 0, []float32{3, 4})}}
	res, err := TopK(format.ReprMean, 0, cands, []float32{1, 1}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Missing, []format.ID{ids[0], ids[2]}) {
		t.Fatalf("missing %x", res.Missing)
	}
	want := []Hit{{ID: ids[3], Pos: 3, Score: 7}, {ID: ids[1], Pos: 1, Score: 3}}
	if !slices.Equal(res.Hits, want) {
		t.Fatalf("hits %+v, want %+v", res.Hits, want)
	}
	none, err := TopK(format.ReprMax, AllLayers, []Candidate{{ID: ids[0]}, {ID: ids[1]}}, nil, 3)
	if err != nil || len(none.Hits) != 0 || !slices.Equal(none.Missing, ids[:2]) {
		t.Fatalf("all missing: %v %+v", err, none)
	}
}

// TestTopKNaNLast: a candidate whose score is NaN ranks after -Inf.
func TestTopKNaNLast(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 28))
	inf := float32(math.Inf(1))
	vals := [][]float32{{float32(math.NaN()), 0}, {-inf, 0}, {1, 0}, {inf, 0}, {-1, 0}}
	var cands []Candidate
	for _, v := range vals {
		id := randID(rng)
		cands = append(cands, Candidate{ID: id, Repr: floatRepr(id, format.ReprMean, 1, 1, 1, 2, 0, v)})
	}
	res, err := TopK(format.ReprMean, 0, cands, []float32{1, 0}, 5)
	if err != nil {
		t.Fatal(err)
	}
	var order []int
	for _, h := range res.Hits {
		order = append(order, h.Pos)
	}
	if !slices.Equal(order, []int{3, 2, 4, 1, 0}) || !math.IsNaN(float64(res.Hits[4].Score)) {
		t.Fatalf("order %v, scores %+v", order, res.Hits)
	}
}

// TestSearchConcurrent runs searches of one index from several goroutines
// (with -race, a check that a search shares nothing mutable).
func TestSearchConcurrent(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 30))
	s := shape{L: 2, T: 2, B: 8, H: 2, D: 16}
	for _, kind := range []format.ReprKind{format.ReprMerged, format.ReprSignHash} {
		param := uint32(3) // 3 rows of merged keys
		if kind == format.ReprSignHash {
			param = 16
		}
		cands := derivedCandidates(t, rng, s, 40, 9, kind, param)
		b, _ := NewBuilder(kind, AllLayers)
		for _, c := range cands {
			if err := b.Add(c.ID, c.Repr); err != nil {
				t.Fatal(err)
			}
		}
		x := b.Index()
		x.SetWorkers(3)
		saved := minWorkerBytes
		minWorkerBytes = 1
		q := make([]float32, s.L*s.H*s.D)
		for i := range q {
			q[i] = float32(rng.NormFloat64())
		}
		want, err := x.Search(q, 7)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make(chan string, 8)
		for g := 0; g < 8; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				got, err := x.Search(q, 7)
				if err != nil || !slices.Equal(got.Hits, want.Hits) || !slices.Equal(got.Missing, want.Missing) {
					errs <- fmt.Sprintf("%s: concurrent search differs: %v", kind, err)
				}
			}()
		}
		wg.Wait()
		minWorkerBytes = saved
		close(errs)
		for e := range errs {
			t.Error(e)
		}
	}
}
