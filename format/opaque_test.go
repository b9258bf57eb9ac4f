package format

import (
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
)

// goldenOpaqueHeader was computed with the Python of docs/format.md §6,
// independently of this package: an opaque 2-layer float32 state of a
// 16-token block, payload 100 bytes (3 i) mod 256, CRC-32C de489c2f.
const goldenOpaqueHeader = "55434d4201000000569d97e717439e91327f78b6bd995559" +
	"0200000010000000020000000000000000000000000000002f9c48de030000006400000000000000"

func goldenOpaque() []byte {
	payload := make([]byte, 100)
	for i := range payload {
		payload[i] = byte(3 * i)
	}
	return NewBlock(BlockHeader{ID: goldenID, NumLayers: 2, BlockSize: 16, Dtype: Float32, Flags: FlagOpaque}, payload)
}

func TestOpaqueGolden(t *testing.T) {
	file := goldenOpaque()
	if got := hex.EncodeToString(file[:HeaderSize]); got != goldenOpaqueHeader {
		t.Fatalf("header\n got %s\nwant %s", got, goldenOpaqueHeader)
	}
	h, err := DecodeBlockHeader(file)
	if err != nil || !h.Opaque() || h.PayloadCRC != 0xde489c2f {
		t.Fatalf("decode: %+v, %v", h, err)
	}
	// 100 bytes are no multiple of layers × T = 4: an opaque block has no
	// shape rule, only its size and CRC.
	crc := func() (uint32, error) { return CRC32C(file[HeaderSize:]), nil }
	if err := ValidateBlock(h, goldenID, int64(len(file)), crc); err != nil {
		t.Fatal(err)
	}
	if n, ok := h.ShapePayload(); ok || h.TensorBytes() != 0 || h.TensorOffset(0, 0) != -1 {
		t.Errorf("opaque block has a layout: shape %d %v, tensor bytes %d, offset %d", n, ok, h.TensorBytes(), h.TensorOffset(0, 0))
	}
	// Size and CRC still hold.
	if err := ValidateBlock(h, goldenID, int64(len(file))+1, crc); RuleOf(err) != RulePayloadLen {
		t.Errorf("one byte more: %v, want rule %s", err, RulePayloadLen)
	}
	file[HeaderSize] ^= 1
	if err := ValidateBlock(h, goldenID, int64(len(file)), crc); RuleOf(err) != RuleCRC {
		t.Errorf("flipped payload bit: %v, want rule %s", err, RuleCRC)
	}
}

func TestOpaqueRejects(t *testing.T) {
	for name, h := range map[string]BlockHeader{
		"heads":    {NumKVHeads: 1},
		"head_dim": {HeadDim: 8},
		"T":        {TensorsPerLayer: 1},
	} {
		h.ID, h.NumLayers, h.BlockSize, h.Flags = goldenID, 1, 16, FlagOpaque
		b, _ := h.MarshalBinary()
		if _, err := DecodeBlockHeader(b); RuleOf(err) != RuleOpaque {
			t.Errorf("opaque block stating %s: %v, want rule %s", name, err, RuleOpaque)
		}
	}
	// No sidecar fits an opaque block.
	r, _ := goldenRepr()
	h, _ := DecodeBlockHeader(goldenOpaque())
	if err := CheckReprForBlock(r, h); RuleOf(err) != RuleOpaque {
		t.Errorf("sidecar of an opaque block: %v, want rule %s", err, RuleOpaque)
	}
}

func TestVerifyFileOpaque(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, goldenID.String()+".bin")
	if err := os.WriteFile(path, goldenOpaque(), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := InspectFile(path)
	if err != nil || !r.Block.Opaque() || !r.CRCDone {
		t.Fatalf("InspectFile: %+v, %v", r, err)
	}
}
