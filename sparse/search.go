package sparse

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"

	"github.com/ucmfs/ucmfs/format"
)

// minWorkerBytes is the least matrix data worth a goroutine of its own
// (a variable for the tests).
var minWorkerBytes = 1 << 20

// Search ranks the index's candidates against query and returns the k best
// (fewer when the index holds fewer), best first, with the index's missing
// candidates.
//
// For kinds 0-2 query is [layers held][heads][dim] float32 (QueryLen
// elements); a candidate's score is the sum over layers and heads of the
// dot product of the query vector with the candidate's vector, for kind 2
// with the best (largest) of the head's rows; higher ranks first, a NaN
// score last. For kind 3 query is [layers held][heads][head_dim] float32
// for any head_dim up to MaxHashDim: each query vector is sign-hashed
// (SignHash with the index's hash_bits) and a candidate's distance is the
// sum over layers and heads of the Hamming distance between the query's
// code and the candidate's (with several rows, the least); lower ranks
// first. Equal scores rank by id (bytewise), then by Pos.
func (x *Index) Search(query []float32, k int) (Result, error) {
	if k < 1 {
		return Result{}, fmt.Errorf("%w: k is %d, want >= 1", ErrArgument, k)
	}
	res := Result{Missing: slices.Clone(x.missing)}
	if len(x.ids) == 0 {
		return res, nil
	}
	if x.kind == format.ReprSignHash {
		codes, err := x.hashQuery(query)
		if err != nil {
			return Result{}, err
		}
		res.Hits = x.searchCodes(codes, k)
		return res, nil
	}
	if len(query) != x.QueryLen() {
		return Result{}, fmt.Errorf("%w: query has %d values, the index wants layers %d × heads %d × dim %d = %d",
			ErrArgument, len(query), x.layers, x.heads, x.dim, x.QueryLen())
	}
	var parts []*topK
	if x.rows == 1 {
		parts = x.parallel(k, 4*x.stride, func(lo, hi int, t *topK) { x.scanFlat(query, lo, hi, t) })
	} else {
		parts = x.parallel(k, 4*x.stride, func(lo, hi int, t *topK) { x.scanRows(query, lo, hi, t) })
	}
	res.Hits = x.mergeHits(parts, k)
	return res, nil
}

// SearchCodes is Search for an index of kind 3 given the query's codes
// already hashed: [layers held][heads][hash_bits/8] bytes.
func (x *Index) SearchCodes(codes []byte, k int) (Result, error) {
	if x.kind != format.ReprSignHash {
		return Result{}, fmt.Errorf("%w: SearchCodes on an index of kind %s", ErrArgument, x.kind)
	}
	if k < 1 {
		return Result{}, fmt.Errorf("%w: k is %d, want >= 1", ErrArgument, k)
	}
	res := Result{Missing: slices.Clone(x.missing)}
	if len(x.ids) == 0 {
		return res, nil
	}
	if want := x.layers * x.heads * x.dim; len(codes) != want {
		return Result{}, fmt.Errorf("%w: query codes are %d bytes, the index wants layers %d × heads %d × %d = %d",
			ErrArgument, len(codes), x.layers, x.heads, x.dim, want)
	}
	res.Hits = x.searchCodes(appendCodes(nil, codes, x.dim, x.wpr), k)
	return res, nil
}

// hashQuery sign-hashes each query vector into packed words.
func (x *Index) hashQuery(query []float32) ([]uint64, error) {
	groups := x.layers * x.heads
	if len(query) == 0 || len(query)%groups != 0 {
		return nil, fmt.Errorf("%w: query has %d values, not a positive multiple of layers %d × heads %d",
			ErrArgument, len(query), x.layers, x.heads)
	}
	dim := len(query) / groups
	if err := checkHashShape(dim, int(x.param)); err != nil {
		return nil, err
	}
	p := getProjection(dim, int(x.param))
	codes := make([]byte, groups*x.dim)
	w := int(max(1, min(int64(x.workerCount()), int64(groups)*int64(dim)*int64(x.param)/minHashWork)))
	var wg sync.WaitGroup
	for i := 0; i < w; i++ {
		lo, hi := groups*i/w, groups*(i+1)/w
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, sums := make([]float64, dim), make([]float64, x.param)
			for g := lo; g < hi; g++ {
				for i, f := range query[g*dim : (g+1)*dim] {
					v[i] = float64(f)
				}
				p.hash(codes[g*x.dim:(g+1)*x.dim], v, sums)
			}
		}()
	}
	wg.Wait()
	return appendCodes(nil, codes, x.dim, x.wpr), nil
}

// minHashWork is the least number of multiply-adds of query hashing worth
// a goroutine of its own.
const minHashWork = 1 << 16

// workerCount is the number of goroutines a search may use.
func (x *Index) workerCount() int {
	if x.workers > 0 {
		return x.workers
	}
	return runtime.GOMAXPROCS(0)
}

// searchCodes ranks by Hamming distance to the packed query words q
// (one code per layer and head).
func (x *Index) searchCodes(q []uint64, k int) []Hit {
	parts := x.parallel(k, 8*x.stride, func(lo, hi int, t *topK) {
		if x.rows == 1 {
			for c := lo; c < hi; c++ {
				t.offerDistance(hamming(q, x.codes[c*x.stride:(c+1)*x.stride]), c)
			}
			return
		}
		w := x.wpr
		for c := lo; c < hi; c++ {
			row := x.codes[c*x.stride : (c+1)*x.stride]
			d := 0
			for g := 0; g < x.layers*x.heads; g++ {
				qg := q[g*w : (g+1)*w]
				best := math.MaxInt
				for r := 0; r < x.rows; r++ {
					o := (g*x.rows + r) * w
					best = min(best, hamming(qg, row[o:o+w]))
				}
				d += best
			}
			t.offerDistance(d, c)
		}
	})
	return x.mergeHits(parts, k)
}

// scanFlat scores candidates [lo, hi) of a one-row index: one dot product
// over the whole candidate, four candidates at a time.
func (x *Index) scanFlat(q []float32, lo, hi int, t *topK) {
	s := x.stride
	c := lo
	for ; c+4 <= hi; c += 4 {
		o := dot4(q, x.data[c*s:(c+4)*s], s)
		t.offerScore(o[0], c)
		t.offerScore(o[1], c+1)
		t.offerScore(o[2], c+2)
		t.offerScore(o[3], c+3)
	}
	for ; c < hi; c++ {
		t.offerScore(dot1(q, x.data[c*s:(c+1)*s]), c)
	}
}

// scanRows scores candidates [lo, hi) of an index with several rows per
// head: per layer and head the best row, four rows at a time.
func (x *Index) scanRows(q []float32, lo, hi int, t *topK) {
	d, rows := x.dim, x.rows
	for c := lo; c < hi; c++ {
		cand := x.data[c*x.stride : (c+1)*x.stride]
		var score float32
		for g := 0; g < x.layers*x.heads; g++ {
			qg := q[g*d : (g+1)*d]
			m := cand[g*rows*d : (g+1)*rows*d]
			best := float32(math.Inf(-1))
			r := 0
			for ; r+4 <= rows; r += 4 {
				for _, v := range dot4(qg, m[r*d:], d) {
					if v > best || v != v {
						best = v
					}
				}
			}
			for ; r < rows; r++ {
				if v := dot1(qg, m[r*d:(r+1)*d]); v > best || v != v {
					best = v
				}
			}
			score += best
		}
		t.offerScore(score, c)
	}
}

// parallel runs scan over contiguous ranges of the candidates on up to
// the index's workers goroutines, bytesPer being the data scanned per
// candidate, and returns each range's top k.
func (x *Index) parallel(k, bytesPer int, scan func(lo, hi int, t *topK)) []*topK {
	n := len(x.ids)
	w := int(max(1, min(int64(x.workerCount()), int64(n)*int64(bytesPer)/int64(minWorkerBytes), int64(n))))
	parts := make([]*topK, w)
	var wg sync.WaitGroup
	for i := range parts {
		parts[i] = newTopK(k, x.ids)
		lo, hi := n*i/w, n*(i+1)/w
		if i == w-1 {
			scan(lo, hi, parts[i])
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			scan(lo, hi, parts[i])
		}()
	}
	wg.Wait()
	return parts
}

// Candidate is a block to rank and its sidecar file (nil when it has
// none).
type Candidate struct {
	ID   format.ID
	Repr []byte
}

// TopK builds an index of kind over layer (or AllLayers) from cands and
// searches it once for the k best candidates; see Builder.Add and
// Index.Search.
func TopK(kind format.ReprKind, layer int, cands []Candidate, query []float32, k int) (Result, error) {
	b, err := NewBuilder(kind, layer)
	if err != nil {
		return Result{}, err
	}
	grown := false
	for i, c := range cands {
		if err := b.Add(c.ID, c.Repr); err != nil {
			return Result{}, err
		}
		if !grown && b.shaped {
			b.Grow(len(cands) - i - 1)
			grown = true
		}
	}
	return b.Index().Search(query, k)
}
