package fs

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/ucmfs/ucmfs/control"
	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/sparse"
	"github.com/ucmfs/ucmfs/store"
	"github.com/ucmfs/ucmfs/tiers"
)

// b64Floats encodes float32 values little-endian in standard base64.
func b64Floats(q []float32) string {
	b := make([]byte, 4*len(q))
	for i, v := range q {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return base64.StdEncoding.EncodeToString(b)
}

// randomQuery returns n normal float32 values.
func randomQuery(r *rand.Rand, n int) []float32 {
	q := make([]float32, n)
	for i := range q {
		q[i] = float32(r.NormFloat64())
	}
	return q
}

// topkLine is a topk request line.
func topkLine(model, kind, layer string, k, heads, dim int, q []float32, ids []format.ID) string {
	var b strings.Builder
	fmt.Fprintf(&b, "topk %s kind=%s layer=%s k=%d heads=%d dim=%d q=%s", model, kind, layer, k, heads, dim, b64Floats(q))
	for _, id := range ids {
		b.WriteString(" " + id.String())
	}
	return b.String()
}

// refTopK is the answer line sparse.TopK gives for the candidates.
func refTopK(t testing.TB, kind format.ReprKind, layer int, cands []sparse.Candidate, q []float32, k int) string {
	t.Helper()
	res, err := sparse.TopK(kind, layer, cands, q, k)
	if err != nil {
		t.Fatalf("sparse.TopK: %v", err)
	}
	parts := []string{"ok", "n=" + strconv.Itoa(len(res.Hits)), "missing=" + strconv.Itoa(len(res.Missing))}
	for _, h := range res.Hits {
		v := strconv.Itoa(h.Distance)
		if kind != format.ReprSignHash {
			v = strconv.FormatFloat(float64(h.Score), 'g', -1, 32)
		}
		parts = append(parts, h.ID.String()+":"+v)
	}
	if len(res.Missing) > 0 {
		parts = append(parts, "missing")
		for _, id := range res.Missing {
			parts = append(parts, id.String())
		}
	}
	return strings.Join(parts, " ")
}

// topkSet is a model of candidate blocks for the topk tests: float32
// blocks of the small shape (three pairs with equal payloads, so equal
// scores rank by id), one whose stored sidecar (kind max) is not what
// its block derives, one block that allows no derivation, and two ids
// no tier holds; ids holds them all, shuffled.
type topkSet struct {
	model    string
	blocks   map[format.ID][]byte // derivable blocks
	storedMx map[format.ID][]byte // stored max sidecars that differ from the derived ones
	ids      []format.ID
}

func newTopKSet(t *testing.T, st *tiers.Stack, model string) *topkSet {
	t.Helper()
	s := &topkSet{model: model, blocks: map[format.ID][]byte{}, storedMx: map[format.ID][]byte{}}
	for i := 0; i < 30; i++ {
		seed := uint64(i)
		if i >= 27 {
			seed = uint64(i - 27) // payloads equal to blocks 0, 1, 2
		}
		k, d := floatBlock(model, i, small, seed)
		put(t, st, k, d)
		s.blocks[k.ID] = d
		s.ids = append(s.ids, k.ID)
	}
	// Block 5's stored sidecar holds block 6's maxima.
	k5 := format.Key{Model: model, ID: s.ids[5]}
	mx := mustDerive(t, s.blocks[s.ids[6]], format.ReprMax, 0)
	mx = format.NewRepr(withID(t, mx, k5.ID), mx[64:])
	put(t, st, sidecarKey(k5), mx)
	s.storedMx[k5.ID] = mx
	bad, bd := testBlock(model, 100, 64)
	put(t, st, bad, bd)
	s.ids = append(s.ids, bad.ID)
	for _, k := range absentKeys(model, 2) {
		s.ids = append(s.ids, k.ID)
	}
	r := rand.New(rand.NewPCG(3, 3))
	r.Shuffle(len(s.ids), func(i, j int) { s.ids[i], s.ids[j] = s.ids[j], s.ids[i] })
	return s
}

// cands are the reference candidates of kind and param: each derivable
// block's derived sidecar, or the stored one where it has that kind;
// nil for the others.
func (s *topkSet) cands(t testing.TB, ids []format.ID, kind format.ReprKind, param uint32) []sparse.Candidate {
	out := make([]sparse.Candidate, len(ids))
	for i, id := range ids {
		out[i].ID = id
		if mx, ok := s.storedMx[id]; ok && kind == format.ReprMax {
			out[i].Repr = mx
		} else if d, ok := s.blocks[id]; ok {
			out[i].Repr = mustDerive(t, d, kind, param)
		}
	}
	return out
}

// topkKinds are the kinds the tests rank with: the request's spelling,
// the kind and the param.
var topkKinds = []struct {
	name  string
	kind  format.ReprKind
	param uint32
}{
	{"mean", format.ReprMean, 0},
	{"max", format.ReprMax, 0},
	{"merged:2", format.ReprMerged, 2},
	{"merged", format.ReprMerged, sparse.DefaultMerge},
	{"signhash:64", format.ReprSignHash, 64},
	{"3", format.ReprSignHash, sparse.DefaultHashBits},
}

// TestTopKMatchesSparse: every kind, one layer or all, answers exactly as
// sparse.TopK on the same sidecars (ties by id), with the candidates that
// have no sidecar listed as missing; with a cache too small to hold a
// sidecar the answers are the same.
func TestTopKMatchesSparse(t *testing.T) {
	for _, cache := range []int64{0, 100} {
		t.Run(fmt.Sprintf("cache=%d", cache), func(t *testing.T) {
			m := newMount(t, Options{}, store.Options{ReprCache: cache})
			set := newTopKSet(t, m.st, testModel)
			c := openCtl(t, m, "topk")
			r := rand.New(rand.NewPCG(1, 2))
			for _, kd := range topkKinds {
				for _, layer := range []int{0, 1, sparse.AllLayers} {
					layers, ls := 1, strconv.Itoa(layer)
					if layer == sparse.AllLayers {
						layers, ls = small.layers, "all"
					}
					q := randomQuery(r, layers*small.heads*small.dim)
					want := refTopK(t, kd.kind, layer, set.cands(t, set.ids, kd.kind, kd.param), q, 7)
					if got := c.ask(topkLine(testModel, kd.name, ls, 7, small.heads, small.dim, q, set.ids)); got != want {
						t.Fatalf("kind %s layer %s\n got %s\nwant %s", kd.name, ls, got, want)
					}
				}
			}
			q := randomQuery(r, small.heads*small.dim)
			all := c.ask(topkLine(testModel, "max", "0", 1000, small.heads, small.dim, q, set.ids))
			if !strings.HasPrefix(all, "ok n=30 missing=3 ") {
				t.Fatalf("k past the candidates: %s", all)
			}
		})
	}
}

// TestTopKStoresAndReuses: a request of the model's own kind stores the
// sidecars it derives; the same request again reuses the session's
// index; a block removed since is then missing, never ranked.
func TestTopKStoresAndReuses(t *testing.T) {
	m := newMount(t, Options{Debug: os.Getenv("UCMFS_FUSE_DEBUG") != ""})
	set := newTopKSet(t, m.st, testModel)
	c := openCtl(t, m, "topk")
	q := randomQuery(rand.New(rand.NewPCG(5, 5)), small.heads*small.dim)
	line := topkLine(testModel, "mean", "1", 5, small.heads, small.dim, q, set.ids)
	want := refTopK(t, format.ReprMean, 1, set.cands(t, set.ids, format.ReprMean, 0), q, 5)
	if got := c.ask(line); got != want {
		t.Fatalf("first\n got %s\nwant %s", got, want)
	}
	st := readStats(t, m)
	if st.TopKDerived != 30 || st.ReprDerived != 29 || st.TopKs != 1 || st.TopKCandidates != 33 || st.TopKMissing != 3 {
		t.Fatalf("after the first request: %+v", st.ControlStats)
	}
	for id := range set.blocks {
		if !m.st.Has(format.Key{Model: testModel, ID: id, Kind: format.Repr}) {
			t.Fatalf("sidecar of %s not stored", id)
		}
	}
	if got := c.ask(line); got != want {
		t.Fatalf("second\n got %s\nwant %s", got, want)
	}
	if st := readStats(t, m); st.TopKReused != 1 || st.TopKDerived != 30 {
		t.Fatalf("after the second request: reused %d derived %d", st.TopKReused, st.TopKDerived)
	}
	gone := set.ids[0]
	if err := os.Remove(m.keyPath(format.Key{Model: testModel, ID: gone})); err != nil {
		t.Fatal(err)
	}
	delete(set.blocks, gone)
	want = refTopK(t, format.ReprMean, 1, set.cands(t, set.ids, format.ReprMean, 0), q, 5)
	if got := c.ask(line); got != want || !strings.Contains(got, "missing="+strconv.Itoa(4)) {
		t.Fatalf("after removing a candidate\n got %s\nwant %s", got, want)
	}
	if st := readStats(t, m); st.TopKReused != 1 {
		t.Fatalf("an index with a removed candidate was reused")
	}
	srv := httptest.NewServer(m.metricsHandler())
	defer srv.Close()
	got := scrape(t, srv.URL+"/metrics")
	for name, want := range map[string]float64{
		"ucm_topk_requests_total": 3, "ucm_topk_candidates_total": 99, "ucm_topk_missing_total": 10,
		"ucm_topk_derived_total": 30, "ucm_topk_reused_total": 1, "ucm_repr_derived_total": 29,
		"ucm_topk_seconds_count": 3,
	} {
		if got[name] != want {
			t.Errorf("%s = %v, want %v", name, got[name], want)
		}
	}
}

// TestTopKErrors: bad requests are answered err with the right errno, one
// per request, and the session keeps serving.
func TestTopKErrors(t *testing.T) {
	m := newMount(t, Options{})
	set := newTopKSet(t, m.st, testModel)
	c := openCtl(t, m, "topk")
	q := randomQuery(rand.New(rand.NewPCG(7, 7)), small.heads*small.dim)
	id := set.ids[0].String()
	ok := topkLine(testModel, "mean", "0", 3, small.heads, small.dim, q, set.ids)
	opts := func(s string) string { return "topk " + testModel + " " + s + " " + id }
	qs := "q=" + b64Floats(q)
	full := "kind=mean layer=0 k=3 heads=3 dim=8 " + qs
	many := make([]string, control.MaxIDs+1)
	for i := range many {
		many[i] = id
	}
	cases := map[string]string{
		"topk":                                                           "EINVAL",
		"rank " + testModel + " " + id:                                   "EINVAL",
		"topk no-such-model " + full + " " + id:                          "ENOENT",
		"topk Bad/Model " + full + " " + id:                              "EINVAL",
		opts("kind=mean layer=0 k=3 heads=3 dim=8"):                      "EINVAL", // no q
		opts(full + " foo=1"):                                            "EINVAL",
		opts(full + " k=4"):                                              "EINVAL",
		opts(strings.Replace(full, "kind=mean", "kind=median", 1)):       "EINVAL",
		opts(strings.Replace(full, "kind=mean", "kind=mean:2", 1)):       "EINVAL",
		opts(strings.Replace(full, "kind=mean", "kind=signhash:12", 1)):  "EINVAL",
		opts(strings.Replace(full, "kind=mean", "kind=9", 1)):            "EINVAL",
		opts(strings.Replace(full, "layer=0", "layer=-1", 1)):            "EINVAL",
		opts(strings.Replace(full, "layer=0", "layer=x", 1)):             "EINVAL",
		opts(strings.Replace(full, "k=3", "k=0", 1)):                     "EINVAL",
		opts(strings.Replace(full, "k=3", "k=-2", 1)):                    "EINVAL",
		opts(strings.Replace(full, "heads=3", "heads=0", 1)):             "EINVAL",
		opts(strings.Replace(full, "heads=3", "heads=2", 1)):             "EINVAL", // q is 3 × 8 values
		opts(strings.Replace(full, "layer=0", "layer=all", 1)):           "ok",     // one layer of 2: every candidate missing
		opts(strings.Replace(full, qs, "q=@@@@", 1)):                     "EINVAL",
		opts(strings.Replace(full, qs, "q=AAAA", 1)):                     "EINVAL", // 3 bytes
		opts(strings.Replace(full, qs, "q=", 1)):                         "EINVAL",
		"topk " + testModel + " " + full:                                 "EINVAL", // no ids
		"topk " + testModel + " " + full + " " + id + " 1234":            "EINVAL",
		"topk " + testModel + " " + full + " " + strings.Join(many, " "): "E2BIG",
	}
	before := readStats(t, m).ControlErrors
	errs := 0
	for req, want := range cases {
		got := c.ask(req)
		if want == "ok" {
			if !strings.HasPrefix(got, "ok n=0 missing=1 missing "+id) {
				t.Errorf("%.80s: %q, want every candidate missing", req, got)
			}
			continue
		}
		errs++
		if errnoOfAnswer(got) != want {
			t.Errorf("%.80s: %q, want %s", req, got, want)
		}
		if !strings.HasPrefix(c.ask(ok), "ok n=3 ") {
			t.Fatalf("the session stopped serving after %.80s", req)
		}
	}
	if n := readStats(t, m).ControlErrors - before; n != int64(errs) {
		t.Errorf("control_errors moved by %d, want %d", n, errs)
	}
}
