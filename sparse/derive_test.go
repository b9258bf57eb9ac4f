package sparse

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ucmfs/ucmfs/format"
)

// deriveShapes covers the three input dtypes, T = 1 (MLA latent), 2 and 3,
// and block sizes that the merge factors below do not divide.
var deriveShapes = []shape{
	{L: 2, T: 2, B: 16, H: 4, D: 32, dt: format.Float32},
	{L: 3, T: 2, B: 10, H: 2, D: 16, dt: format.BFloat16},
	{L: 2, T: 1, B: 7, H: 1, D: 64, dt: format.Float16},
	{L: 1, T: 3, B: 5, H: 3, D: 8, dt: format.Float32},
	{L: 2, T: 1, B: 1, H: 2, D: 12, dt: format.BFloat16},
	{L: 1, T: 2, B: 33, H: 2, D: 24, dt: format.Float16},
}

// deriveKinds are the kinds and params each shape is derived with; 0
// means the default param.
var deriveKinds = []struct {
	kind  format.ReprKind
	param uint32
}{
	{format.ReprMean, 0}, {format.ReprMax, 0},
	{format.ReprMerged, 0}, {format.ReprMerged, 1}, {format.ReprMerged, 3}, {format.ReprMerged, 64},
	{format.ReprSignHash, 0}, {format.ReprSignHash, 8}, {format.ReprSignHash, 64}, {format.ReprSignHash, 200},
}

func TestDeriveMatchesReference(t *testing.T) { withGoKernels(t, testDeriveMatchesReference) }

func testDeriveMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, s := range deriveShapes {
		block := randBlock(rng, s)
		bh, _ := format.DecodeBlockHeader(block)
		for _, kp := range deriveKinds {
			t.Run(fmt.Sprintf("%s-T%d-B%d-%s-%d", s.dt, s.T, s.B, kp.kind, kp.param), func(t *testing.T) {
				file := mustDerive(t, block, kp.kind, kp.param)
				r, err := ParseRepr(file)
				if err != nil {
					t.Fatal(err)
				}
				param, _ := ResolveParam(kp.kind, kp.param)
				want := refDerive(block, kp.kind, int(param))
				h := r.Header
				if h.ID != bh.ID || h.Kind != kp.kind || h.Param != param || int(h.NumLayers) != s.L ||
					int(h.NumKVHeads) != s.H || int(h.Rows) != want.rows || int(h.Dim) != want.dim {
					t.Fatalf("header %v, want rows %d dim %d param %d", h, want.rows, want.dim, param)
				}
				dh, err := DerivedHeader(bh, kp.kind, kp.param)
				if err != nil {
					t.Fatal(err)
				}
				dh.PayloadCRC, dh.Flags = h.PayloadCRC, h.Flags
				if dh != h {
					t.Fatalf("DerivedHeader %v, Derive made %v", dh, h)
				}
				if kp.kind == format.ReprSignHash {
					if h.Dtype != format.Uint8 || string(r.Data) != string(want.codes) {
						t.Fatalf("codes\n got %x\nwant %x", r.Data, want.codes)
					}
					return
				}
				got, err := r.Floats(nil)
				if err != nil {
					t.Fatal(err)
				}
				if h.Dtype != format.Float32 || len(got) != len(want.f) {
					t.Fatalf("dtype %s, %d values, want float32 and %d", h.Dtype, len(got), len(want.f))
				}
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want.f[i]) {
						t.Fatalf("value %d is %v, reference %v", i, got[i], want.f[i])
					}
				}
			})
		}
	}
}

// TestDeriveMeanFloat32 is the acceptance check: a float32 block yields a
// kind-0 sidecar whose values are the mean of its K vectors (within
// float32 rounding), laid out [layers][heads][1][head_dim].
func TestDeriveMeanFloat32(t *testing.T) {
	const L, B, H, D = 3, 16, 4, 8
	rng := rand.New(rand.NewPCG(3, 4))
	k := make([]float32, L*2*B*H*D) // [layer][K,V][token][head][dim]
	for i := range k {
		k[i] = float32(rng.NormFloat64() * 10)
	}
	payload := make([]byte, 4*len(k))
	putFloats(payload, k)
	block := format.NewBlock(format.BlockHeader{ID: randID(rng), NumLayers: L, BlockSize: B,
		Dtype: format.Float32, NumKVHeads: H, HeadDim: D}, payload)
	file := mustDerive(t, block, format.ReprMean, 0)
	r, err := ParseRepr(file)
	if err != nil {
		t.Fatal(err)
	}
	if h := r.Header; h.Kind != format.ReprMean || h.Dtype != format.Float32 || h.NumLayers != L ||
		h.NumKVHeads != H || h.Rows != 1 || h.Dim != D || len(r.Data) != 4*L*H*D {
		t.Fatalf("header %v with %d data bytes", h, len(r.Data))
	}
	got, _ := r.Floats(nil)
	for l := 0; l < L; l++ {
		for h := 0; h < H; h++ {
			for d := 0; d < D; d++ {
				var sum float64
				for tok := 0; tok < B; tok++ {
					sum += float64(k[((l*2+0)*B+tok)*H*D+h*D+d]) // tensor 0 = K
				}
				want := sum / B
				v := got[((l*H+h)*1+0)*D+d]
				if math.Abs(float64(v)-want) > math.Abs(want)*0x1p-23 {
					t.Fatalf("layer %d head %d dim %d: %v, mean is %v", l, h, d, v, want)
				}
			}
		}
	}
}

func TestAppendDeriveNoAlloc(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	block := randBlock(rng, shape{L: 4, T: 2, B: 16, H: 8, D: 64, dt: format.BFloat16})
	for _, kp := range deriveKinds {
		want := mustDerive(t, block, kp.kind, kp.param)
		buf := make([]byte, 3, 3+len(want))
		got, err := AppendDerive(buf, block, kp.kind, kp.param)
		if err != nil || string(got[3:]) != string(want) || &got[0] != &buf[0] {
			t.Fatalf("AppendDerive kind %s: err %v, equal %v, in place %v", kp.kind, err, string(got[3:]) == string(want), &got[0] == &buf[0])
		}
		allocs := testing.AllocsPerRun(5, func() { _, _ = AppendDerive(buf, block, kp.kind, kp.param) })
		if allocs > 0 && !raceEnabled { // the race detector makes sync.Pool drop items
			t.Errorf("AppendDerive kind %s param %d: %.0f allocations", kp.kind, kp.param, allocs)
		}
	}
}
