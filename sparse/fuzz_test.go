package sparse

import (
	"math/rand/v2"
	"testing"

	"github.com/ucmfs/ucmfs/format"
)

// FuzzDerive: any bytes either fail with an error or give a sidecar that
// passes format's validators against its block; none panics.
func FuzzDerive(f *testing.F) {
	rng := rand.New(rand.NewPCG(41, 42))
	for _, s := range deriveShapes[:3] {
		f.Add(randBlock(rng, s), uint8(0), uint32(0))
	}
	f.Add(randBlock(rng, deriveShapes[3]), uint8(2), uint32(2))
	f.Add(randBlock(rng, deriveShapes[4]), uint8(3), uint32(16))
	f.Fuzz(func(t *testing.T, block []byte, kind uint8, param uint32) {
		file, err := Derive(block, format.ReprKind(kind), param)
		if err != nil {
			return
		}
		r, err := ParseRepr(file)
		if err != nil {
			t.Fatalf("derived sidecar does not parse: %v", err)
		}
		bh, _ := format.DecodeBlockHeader(block)
		if err := format.CheckReprForBlock(r.Header, bh); err != nil {
			t.Fatalf("derived sidecar does not fit its block: %v", err)
		}
	})
}

// FuzzBuilderAdd: any sidecar bytes are added or rejected with an error,
// and the index answers a search either way.
func FuzzBuilderAdd(f *testing.F) {
	rng := rand.New(rand.NewPCG(43, 44))
	block := randBlock(rng, deriveShapes[1])
	for _, k := range []format.ReprKind{format.ReprMean, format.ReprMerged, format.ReprSignHash} {
		file, err := Derive(block, k, 0)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(file, uint8(k), int8(0))
	}
	f.Fuzz(func(t *testing.T, repr []byte, kind uint8, layer int8) {
		b, err := NewBuilder(format.ReprKind(kind%4), int(layer)%3)
		if err != nil {
			return
		}
		var id format.ID
		if len(repr) >= 24 {
			copy(id[:], repr[8:24])
		}
		if b.Add(id, repr) != nil {
			return
		}
		x := b.Index()
		q := make([]float32, max(x.QueryLen(), 8))
		if _, err := x.Search(q[:x.QueryLen()], 3); err != nil && x.Kind() != format.ReprSignHash {
			t.Fatalf("search of the right shape: %v", err)
		}
		_, _ = x.Search(q, 3)
	})
}
