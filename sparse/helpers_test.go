package sparse

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ucmfs/ucmfs/format"
)

// shape is the shape of a test block.
type shape struct {
	L, T, B, H, D int
	dt            format.Dtype
}

func randID(rng *rand.Rand) format.ID {
	var id format.ID
	for i := range id {
		id[i] = byte(rng.UintN(256))
	}
	return id
}

// randElem appends one random finite element of dtype dt: a normal value
// for float32 and bfloat16; a random binary16 with a moderate exponent,
// or a subnormal one time in 8, for float16.
func randElem(b []byte, rng *rand.Rand, dt format.Dtype) []byte {
	f := float32(rng.NormFloat64())
	switch dt {
	case format.Float32:
		return binary.LittleEndian.AppendUint32(b, math.Float32bits(f))
	case format.BFloat16:
		return binary.LittleEndian.AppendUint16(b, uint16(math.Float32bits(f)>>16))
	}
	exp := uint16(8 + rng.UintN(9))
	if rng.UintN(8) == 0 {
		exp = 0
	}
	h := uint16(rng.UintN(2))<<15 | exp<<10 | uint16(rng.UintN(1024))
	return binary.LittleEndian.AppendUint16(b, h)
}

// randBlock is a complete block file of shape s with random finite values.
func randBlock(rng *rand.Rand, s shape) []byte {
	n := s.L * s.T * s.B * s.H * s.D
	payload := make([]byte, 0, n*s.dt.Size())
	for i := 0; i < n; i++ {
		payload = randElem(payload, rng, s.dt)
	}
	tpl := uint32(s.T)
	if s.T == 2 && rng.UintN(2) == 0 {
		tpl = 0 // 0 means 2
	}
	h := format.BlockHeader{ID: randID(rng), NumLayers: uint32(s.L), BlockSize: uint32(s.B), Dtype: s.dt,
		NumKVHeads: uint32(s.H), HeadDim: uint32(s.D), TensorsPerLayer: tpl}
	return format.NewBlock(h, payload)
}

// floatRepr is a complete float32 sidecar file of kind with values v,
// laid out [layers][heads][rows][dim].
func floatRepr(id format.ID, kind format.ReprKind, layers, heads, rows, dim int, param uint32, v []float32) []byte {
	h := format.ReprHeader{ID: id, Kind: kind, Dtype: format.Float32, NumLayers: uint32(layers),
		NumKVHeads: uint32(heads), Rows: uint32(rows), Dim: uint32(dim), Param: param}
	payload := make([]byte, 4*len(v))
	putFloats(payload, v)
	return format.NewRepr(h, payload)
}

// mustDerive derives and checks the sidecar against its block with
// format's validators.
func mustDerive(t testing.TB, block []byte, kind format.ReprKind, param uint32) []byte {
	t.Helper()
	file, err := Derive(block, kind, param)
	if err != nil {
		t.Fatalf("Derive kind %s param %d: %v", kind, param, err)
	}
	rh, err := format.DecodeReprHeader(file)
	if err != nil {
		t.Fatal(err)
	}
	bh, _ := format.DecodeBlockHeader(block)
	crc := func() (uint32, error) { return format.CRC32C(file[format.HeaderSize:]), nil }
	if err := format.ValidateRepr(rh, bh.ID, int64(len(file)), crc); err != nil {
		t.Fatalf("derived sidecar fails ValidateRepr: %v", err)
	}
	if err := format.CheckReprForBlock(rh, bh); err != nil {
		t.Fatalf("derived sidecar fails CheckReprForBlock: %v", err)
	}
	return file
}

// withGoKernels runs f with the assembly kernels off, then (when the CPU
// has them) on.
func withGoKernels(t *testing.T, f func(t *testing.T)) {
	avx, pop := useAVX2, usePOPCNT
	defer func() { useAVX2, usePOPCNT = avx, pop }()
	useAVX2, usePOPCNT = false, false
	t.Run("go", f)
	if avx || pop {
		useAVX2, usePOPCNT = avx, pop
		t.Run("asm", f)
	}
}
