package sparse

import (
	"bytes"
	"math"
	"slices"

	"github.com/ucmfs/ucmfs/format"
)

// Hit is one ranked candidate.
type Hit struct {
	ID  format.ID
	Pos int // the candidate's ordinal among the Builder.Add calls (missing ones count)
	// Score is the dot-product score of kinds 0-2 (higher ranks first).
	Score float32
	// Distance is the Hamming distance of kind 3 (lower ranks first).
	Distance int
}

// Result is the answer of a search: the best candidates, best first, and
// the candidates that could not be ranked for want of a sidecar.
type Result struct {
	Hits    []Hit
	Missing []format.ID
}

// entry is a scored candidate: key is the rank key (higher first: the
// score, or minus the distance; a NaN score has key -Inf), row its index in
// the matrix.
type entry struct {
	key   float64
	score float32
	row   int
}

// topK keeps the k best entries seen, the worst at h[0].
type topK struct {
	k   int
	ids []format.ID
	h   []entry
}

func newTopK(k int, ids []format.ID) *topK {
	return &topK{k: k, ids: ids, h: make([]entry, 0, min(k, len(ids)))}
}

// before reports whether a ranks before b: higher key, then smaller id,
// then smaller row.
func before(ids []format.ID, a, b entry) bool {
	if a.key != b.key {
		return a.key > b.key
	}
	if c := bytes.Compare(ids[a.row][:], ids[b.row][:]); c != 0 {
		return c < 0
	}
	return a.row < b.row
}

// offerScore offers a dot-product score.
func (t *topK) offerScore(s float32, row int) {
	key := float64(s)
	if s != s {
		key = math.Inf(-1)
	}
	if len(t.h) == t.k && key < t.h[0].key {
		return
	}
	t.offer(entry{key: key, score: s, row: row})
}

// offerDistance offers a Hamming distance.
func (t *topK) offerDistance(d int, row int) {
	key := -float64(d)
	if len(t.h) == t.k && key < t.h[0].key {
		return
	}
	t.offer(entry{key: key, row: row})
}

func (t *topK) offer(e entry) {
	h := t.h
	if len(h) < t.k {
		h = append(h, e)
		for i := len(h) - 1; i > 0; { // sift up: the worst rises to the root
			p := (i - 1) / 2
			if !before(t.ids, h[p], h[i]) {
				break
			}
			h[p], h[i] = h[i], h[p]
			i = p
		}
		t.h = h
		return
	}
	if !before(t.ids, e, h[0]) {
		return
	}
	h[0] = e
	for i := 0; ; { // sift down
		w, l, r := i, 2*i+1, 2*i+2
		if l < len(h) && before(t.ids, h[w], h[l]) {
			w = l
		}
		if r < len(h) && before(t.ids, h[w], h[r]) {
			w = r
		}
		if w == i {
			break
		}
		h[i], h[w] = h[w], h[i]
		i = w
	}
}

// mergeHits merges the workers' entries into the k best hits, best first.
func (x *Index) mergeHits(parts []*topK, k int) []Hit {
	var all []entry
	for _, p := range parts {
		all = append(all, p.h...)
	}
	slices.SortFunc(all, func(a, b entry) int {
		if before(x.ids, a, b) {
			return -1
		}
		if before(x.ids, b, a) {
			return 1
		}
		return 0
	})
	all = all[:min(k, len(all))]
	hits := make([]Hit, len(all))
	for i, e := range all {
		hits[i] = Hit{ID: x.ids[e.row], Pos: x.pos[e.row]}
		if x.kind == format.ReprSignHash {
			hits[i].Distance = int(-e.key)
		} else {
			hits[i].Score = e.score
		}
	}
	return hits
}
