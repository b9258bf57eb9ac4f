package sparse

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/ucmfs/ucmfs/format"
)

func TestDeriveErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	good := randBlock(rng, shape{L: 2, T: 2, B: 4, H: 2, D: 8, dt: format.Float32})
	edit := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	setU32 := func(off int, v uint32) []byte {
		return edit(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[off:], v); return b })
	}
	cases := []struct {
		name  string
		block []byte
		kind  format.ReprKind
		param uint32
		want  error
	}{
		{"empty", nil, format.ReprMean, 0, format.ErrFormat},
		{"short header", good[:40], format.ReprMean, 0, format.ErrFormat},
		{"short payload", good[:len(good)-4], format.ReprMean, 0, format.ErrFormat},
		{"long payload", append(append([]byte(nil), good...), 0, 0, 0, 0), format.ReprMean, 0, format.ErrFormat},
		{"bad magic", edit(func(b []byte) []byte { b[0] = 'X'; return b }), format.ReprMean, 0, format.ErrFormat},
		{"bad version", setU32(4, 2), format.ReprMean, 0, format.ErrFormat},
		{"zero layers", setU32(24, 0), format.ReprMean, 0, format.ErrFormat},
		{"unknown dtype", setU32(32, 99), format.ReprMean, 0, format.ErrFormat},
		{"int8", setU32(32, uint32(format.Int8)), format.ReprMean, 0, ErrUnsupported},
		{"float8", setU32(32, uint32(format.Float8E4M3FN)), format.ReprMax, 0, ErrUnsupported},
		{"heads not stated", setU32(36, 0), format.ReprMean, 0, ErrUnsupported},
		{"head_dim not stated", setU32(40, 0), format.ReprSignHash, 0, ErrUnsupported},
		{"unknown kind", good, format.ReprKind(4), 0, ErrArgument},
		{"mean with param", good, format.ReprMean, 2, ErrArgument},
		{"max with param", good, format.ReprMax, 1, ErrArgument},
		{"hash bits not multiple of 8", good, format.ReprSignHash, 12, ErrArgument},
		{"hash bits too many", good, format.ReprSignHash, MaxHashBits + 8, ErrArgument},
	}
	for _, c := range cases {
		if _, err := Derive(c.block, c.kind, c.param); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	wide := randBlock(rng, shape{L: 1, T: 1, B: 1, H: 1, D: MaxHashDim + 8, dt: format.BFloat16})
	if _, err := Derive(wide, format.ReprSignHash, 0); !errors.Is(err, ErrUnsupported) {
		t.Errorf("sign-hash of head_dim %d: %v", MaxHashDim+8, err)
	}
	if _, err := Derive(wide, format.ReprMean, 0); err != nil {
		t.Errorf("mean of head_dim %d: %v", MaxHashDim+8, err)
	}
	// An opaque block (a Mamba state) has no keys: nothing derives from it,
	// whatever its payload.
	var opaque [format.HeaderSize]byte
	format.BlockHeader{ID: randID(rng), NumLayers: 2, BlockSize: 4, Dtype: format.Float32, Flags: format.FlagOpaque}.Encode(opaque[:])
	op := append(opaque[:], good[format.HeaderSize:]...)
	for _, kind := range []format.ReprKind{format.ReprMean, format.ReprMax, format.ReprMerged, format.ReprSignHash} {
		if _, err := Derive(op, kind, 0); !errors.Is(err, ErrUnsupported) {
			t.Errorf("%s of an opaque block: %v, want ErrUnsupported", kind, err)
		}
		h, _ := format.DecodeBlockHeader(op)
		if _, err := DerivedHeader(h, kind, 0); !errors.Is(err, ErrUnsupported) {
			t.Errorf("DerivedHeader %s of an opaque block: %v, want ErrUnsupported", kind, err)
		}
	}
	// The header reports a larger payload than the shape: the shape rule.
	if _, err := Derive(setU32(28, 5), format.ReprMean, 0); format.RuleOf(err) != format.RulePayloadSize {
		t.Errorf("block_size beyond the payload: %v", err)
	}
}

func TestParseReprErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	id := randID(rng)
	good := floatRepr(id, format.ReprMean, 1, 2, 1, 4, 0, make([]float32, 8))
	if _, err := ParseRepr(good); err != nil {
		t.Fatal(err)
	}
	badCRC := append([]byte(nil), good...)
	badCRC[len(badCRC)-1] ^= 1
	cases := map[string][]byte{
		"empty": nil, "short": good[:20], "truncated": good[:len(good)-1], "crc": badCRC,
		"block magic": append([]byte("UCMB"), good[4:]...),
	}
	for name, file := range cases {
		if _, err := ParseRepr(file); !errors.Is(err, format.ErrFormat) {
			t.Errorf("%s: %v, want ErrFormat", name, err)
		}
	}
	u8 := format.NewRepr(format.ReprHeader{ID: id, Kind: format.ReprMerged, Dtype: format.Int8,
		NumLayers: 1, NumKVHeads: 1, Rows: 1, Dim: 4, Param: 4}, make([]byte, 4))
	r, err := ParseRepr(u8)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Floats(nil); !errors.Is(err, ErrUnsupported) {
		t.Errorf("Floats of int8: %v", err)
	}
	r.Data = r.Data[:2]
	r.Header.Dtype = format.Float16
	if _, err := r.Floats(nil); !errors.Is(err, ErrArgument) {
		t.Errorf("Floats of short data: %v", err)
	}
}

func TestBuilderErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	a, b := randID(rng), randID(rng)
	mean := func(id format.ID, layers, heads, dim int) []byte {
		return floatRepr(id, format.ReprMean, layers, heads, 1, dim, 0, make([]float32, layers*heads*dim))
	}
	if _, err := NewBuilder(format.ReprKind(7), 0); !errors.Is(err, ErrArgument) {
		t.Errorf("unknown kind: %v", err)
	}
	if _, err := NewBuilder(format.ReprMean, -2); !errors.Is(err, ErrArgument) {
		t.Errorf("layer -2: %v", err)
	}
	bl, _ := NewBuilder(format.ReprMean, 1)
	if err := bl.Add(a, mean(a, 2, 2, 4)); err != nil {
		t.Fatal(err)
	}
	i8 := format.NewRepr(format.ReprHeader{ID: b, Kind: format.ReprMean, Dtype: format.Int8,
		NumLayers: 2, NumKVHeads: 2, Rows: 1, Dim: 4}, make([]byte, 16))
	corrupt := mean(b, 2, 2, 4)
	corrupt[len(corrupt)-1] ^= 0x80
	cases := []struct {
		name string
		id   format.ID
		repr []byte
		want error
	}{
		{"other id", b, mean(a, 2, 2, 4), ErrMismatch},
		{"other kind", b, floatRepr(b, format.ReprMax, 2, 2, 1, 4, 0, make([]float32, 16)), ErrMismatch},
		{"other heads", b, mean(b, 2, 3, 4), ErrMismatch},
		{"other dim", b, mean(b, 2, 2, 8), ErrMismatch},
		{"other layers", b, mean(b, 3, 2, 4), ErrMismatch},
		{"layer out of range", b, mean(b, 1, 2, 4), ErrMismatch},
		{"int8 data", b, i8, ErrUnsupported},
		{"corrupt", b, corrupt, format.ErrFormat},
		{"garbage", b, []byte("not a sidecar"), format.ErrFormat},
	}
	for _, c := range cases {
		if err := bl.Add(c.id, c.repr); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	x := bl.Index()
	if x.Len() != 1 || len(x.Missing()) != 0 || x.QueryLen() != 8 || x.Layer() != 1 || x.Kind() != format.ReprMean {
		t.Fatalf("rejected sidecars changed the index: len %d missing %d querylen %d", x.Len(), len(x.Missing()), x.QueryLen())
	}
}

func TestSearchErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	id := randID(rng)
	bl, _ := NewBuilder(format.ReprMean, AllLayers)
	if err := bl.Add(id, floatRepr(id, format.ReprMean, 2, 2, 1, 4, 0, make([]float32, 16))); err != nil {
		t.Fatal(err)
	}
	x := bl.Index()
	for _, k := range []int{0, -1} {
		if _, err := x.Search(make([]float32, 16), k); !errors.Is(err, ErrArgument) {
			t.Errorf("k %d: %v", k, err)
		}
	}
	for _, n := range []int{0, 8, 15, 17, 32} {
		if _, err := x.Search(make([]float32, n), 1); !errors.Is(err, ErrArgument) {
			t.Errorf("query of %d values: %v", n, err)
		}
	}
	if _, err := x.SearchCodes(make([]byte, 16), 1); !errors.Is(err, ErrArgument) {
		t.Errorf("SearchCodes on a mean index: %v", err)
	}

	sh, _ := NewBuilder(format.ReprSignHash, 0)
	code := format.NewRepr(format.ReprHeader{ID: id, Kind: format.ReprSignHash, Dtype: format.Uint8,
		NumLayers: 1, NumKVHeads: 2, Rows: 1, Dim: 2, Param: 16}, make([]byte, 4))
	if err := sh.Add(id, code); err != nil {
		t.Fatal(err)
	}
	xs := sh.Index()
	for _, n := range []int{0, 3, 2 * (MaxHashDim + 1)} {
		if _, err := xs.Search(make([]float32, n), 1); !errors.Is(err, ErrArgument) {
			t.Errorf("sign-hash query of %d values: %v", n, err)
		}
	}
	if _, err := xs.SearchCodes(make([]byte, 3), 1); !errors.Is(err, ErrArgument) {
		t.Errorf("codes of 3 bytes: %v", err)
	}
	if _, err := xs.SearchCodes(make([]byte, 4), 0); !errors.Is(err, ErrArgument) {
		t.Errorf("SearchCodes k 0: %v", err)
	}
	if _, err := TopK(format.ReprMean, 0, []Candidate{{ID: id, Repr: code}}, nil, 1); !errors.Is(err, ErrMismatch) {
		t.Errorf("TopK with a sidecar of another kind: %v", err)
	}
	if _, err := TopK(format.ReprMean, -3, nil, nil, 1); !errors.Is(err, ErrArgument) {
		t.Errorf("TopK layer -3: %v", err)
	}
}
