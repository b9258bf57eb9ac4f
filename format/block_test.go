package format

import (
	"bytes"
	"encoding/hex"
	"errors"
	"testing"
)

// Golden values computed with Python's struct and a bitwise CRC-32C,
// independently of this package (see docs/format.md).
const (
	goldenBlockHeader = "55434d4201000000569d97e717439e91327f78b6bd995559" +
		"02000000040000000100000002000000040000000000000010f84934010000000001000000000000"
	goldenBlockCRC = 0x3449f810
)

var goldenID = mustID("569d97e717439e91327f78b6bd995559")

func mustID(s string) ID {
	id, err := ParseID(s)
	if err != nil {
		panic(err)
	}
	return id
}

// goldenBlock is a 2-layer bfloat16 block of 4 tokens, 2 heads of dim 4.
func goldenBlock() (BlockHeader, []byte) {
	h := BlockHeader{ID: goldenID, NumLayers: 2, BlockSize: 4, Dtype: BFloat16, NumKVHeads: 2, HeadDim: 4}
	payload := make([]byte, 256)
	for i := range payload {
		payload[i] = byte(i % 251)
	}
	return h, payload
}

func TestBlockHeaderGolden(t *testing.T) {
	h, payload := goldenBlock()
	file := NewBlock(h, payload)
	if got := hex.EncodeToString(file[:HeaderSize]); got != goldenBlockHeader {
		t.Fatalf("header\n got %s\nwant %s", got, goldenBlockHeader)
	}
	if !bytes.Equal(file[HeaderSize:], payload) {
		t.Fatal("payload not copied after the header")
	}
	d, err := DecodeBlockHeader(file)
	if err != nil {
		t.Fatal(err)
	}
	want := h
	want.PayloadLen, want.PayloadCRC, want.Flags = 256, goldenBlockCRC, FlagCRC
	if d != want {
		t.Fatalf("decoded %+v\nwant %+v", d, want)
	}
	if err := ValidateBlock(d, goldenID, int64(len(file)), func() (uint32, error) { return CRC32C(file[HeaderSize:]), nil }); err != nil {
		t.Fatal(err)
	}
	b, _ := d.MarshalBinary()
	var u BlockHeader
	if err := u.UnmarshalBinary(b); err != nil || u != d || !bytes.Equal(b, file[:HeaderSize]) {
		t.Fatalf("round trip: %v %+v", err, u)
	}
}

func TestDecodeBlockHeaderRejects(t *testing.T) {
	h, payload := goldenBlock()
	good := NewBlock(h, payload)[:HeaderSize]
	cases := []struct {
		name string
		edit func(b []byte) []byte
		rule Rule
	}{
		{"short", func(b []byte) []byte { return b[:63] }, RuleSize},
		{"magic", func(b []byte) []byte { copy(b, "UCMR"); return b }, RuleMagic},
		{"version", func(b []byte) []byte { b[4] = 2; return b }, RuleVersion},
		{"layers", func(b []byte) []byte { clear(b[24:28]); return b }, RuleNumLayers},
		{"block size", func(b []byte) []byte { clear(b[28:32]); return b }, RuleBlockSize},
		{"dtype", func(b []byte) []byte { b[32] = 7; return b }, RuleDtype},
		{"flags", func(b []byte) []byte { b[52] |= 4; return b }, RuleFlags},
		{"opaque with a shape", func(b []byte) []byte { b[52] |= 2; return b }, RuleOpaque},
		{"high flag", func(b []byte) []byte { b[55] = 0x80; return b }, RuleFlags},
	}
	for _, c := range cases {
		b := c.edit(bytes.Clone(good))
		_, err := DecodeBlockHeader(b)
		if !errors.Is(err, ErrFormat) || RuleOf(err) != c.rule {
			t.Errorf("%s: err %v (rule %q), want rule %q", c.name, err, RuleOf(err), c.rule)
		}
	}
}

func TestValidateBlockRules(t *testing.T) {
	base, payload := goldenBlock()
	full := NewBlock(base, payload)
	good, _ := DecodeBlockHeader(full)
	size := int64(len(full))
	crcOK := func() (uint32, error) { return goldenBlockCRC, nil }
	other := mustID("0157b0468367bd7d6faa9645fada2bb5")
	cases := []struct {
		name string
		h    func(BlockHeader) BlockHeader
		id   ID
		size int64
		rule Rule
	}{
		{"size < 64", nil, goldenID, 63, RuleSize},
		{"id differs from name", nil, other, size, RuleID},
		{"num_layers 0", func(h BlockHeader) BlockHeader { h.NumLayers = 0; return h }, goldenID, size, RuleNumLayers},
		{"block_size 0", func(h BlockHeader) BlockHeader { h.BlockSize = 0; return h }, goldenID, size, RuleBlockSize},
		{"dtype unknown", func(h BlockHeader) BlockHeader { h.Dtype = 9; return h }, goldenID, size, RuleDtype},
		{"unknown flag", func(h BlockHeader) BlockHeader { h.Flags |= 4; return h }, goldenID, size, RuleFlags},
		{"payload_len differs", nil, goldenID, size - 2, RulePayloadLen},
		{"shape differs", func(h BlockHeader) BlockHeader { h.HeadDim = 8; return h }, goldenID, size, RulePayloadSize},
		{"shape overflows", func(h BlockHeader) BlockHeader {
			h.NumLayers, h.BlockSize, h.NumKVHeads, h.HeadDim = 1<<31, 1<<31, 1<<31, 1<<31
			return h
		}, goldenID, size, RulePayloadSize},
		{"not a multiple of layers*T", func(h BlockHeader) BlockHeader { h.NumKVHeads, h.HeadDim, h.PayloadLen = 0, 0, 0; return h }, goldenID, size - 2, RulePayloadSize},
		{"crc", func(h BlockHeader) BlockHeader { h.PayloadCRC ^= 1; return h }, goldenID, size, RuleCRC},
	}
	for _, c := range cases {
		h := good
		if c.h != nil {
			h = c.h(h)
		}
		err := ValidateBlock(h, c.id, c.size, crcOK)
		if !errors.Is(err, ErrFormat) || RuleOf(err) != c.rule {
			t.Errorf("%s: err %v (rule %q), want rule %q", c.name, err, RuleOf(err), c.rule)
		}
	}
}

func TestValidateBlockAccepts(t *testing.T) {
	good, _ := goldenBlock()
	good.PayloadLen = 256
	crcErr := errors.New("disk gone")
	failing := func() (uint32, error) { return 0, crcErr }
	// Without FlagCRC the CRC is not computed.
	if err := ValidateBlock(good, goldenID, 64+256, failing); err != nil {
		t.Errorf("unflagged: %v", err)
	}
	// Shape not stated: any multiple of layers × T, payload_len 0, even 0 bytes.
	loose := BlockHeader{ID: goldenID, NumLayers: 3, BlockSize: 16, Dtype: Float8E5M2, TensorsPerLayer: 1}
	for _, n := range []int64{0, 3, 3 * 1024} {
		if err := ValidateBlock(loose, goldenID, 64+n, nil); err != nil {
			t.Errorf("loose %d: %v", n, err)
		}
	}
	// An error of the CRC function is passed through, not a format error.
	good.Flags = FlagCRC
	if err := ValidateBlock(good, goldenID, 64+256, failing); !errors.Is(err, crcErr) || errors.Is(err, ErrFormat) {
		t.Errorf("crc error: %v", err)
	}
	// A nil CRC function skips the rule.
	if err := ValidateBlock(good, goldenID, 64+256, nil); err != nil {
		t.Errorf("nil crc func: %v", err)
	}
}

func TestTensorLayout(t *testing.T) {
	h, _ := goldenBlock()
	if h.Tensors() != 2 || h.TensorBytes() != 4*2*4*2 {
		t.Fatalf("T %d S %d", h.Tensors(), h.TensorBytes())
	}
	wants := map[[2]int]int64{{0, 0}: 64, {0, 1}: 128, {1, 0}: 192, {1, 1}: 256, {2, 0}: -1, {0, 2}: -1, {-1, 0}: -1}
	for lt, want := range wants {
		if got := h.TensorOffset(lt[0], lt[1]); got != want {
			t.Errorf("TensorOffset%v = %d, want %d", lt, got, want)
		}
	}
	// MLA: one latent tensor per layer, shape not stated, size from payload_len.
	mla := BlockHeader{NumLayers: 4, BlockSize: 8, Dtype: BFloat16, TensorsPerLayer: 1, PayloadLen: 4 * 1000}
	if mla.Tensors() != 1 || mla.TensorBytes() != 1000 || mla.TensorOffset(3, 0) != 64+3000 {
		t.Errorf("mla: T %d S %d off %d", mla.Tensors(), mla.TensorBytes(), mla.TensorOffset(3, 0))
	}
	unknown := BlockHeader{NumLayers: 4, BlockSize: 8}
	if unknown.TensorBytes() != 0 || unknown.TensorOffset(0, 0) != -1 {
		t.Errorf("unknown shape: S %d", unknown.TensorBytes())
	}
}

func TestDtype(t *testing.T) {
	names := []string{"float16", "bfloat16", "float32", "float8_e4m3fn", "float8_e5m2", "int8", "uint8"}
	sizes := []int{2, 2, 4, 1, 1, 1, 1}
	for i, name := range names {
		d, err := ParseDtype(name)
		if err != nil || d != Dtype(i) || d.String() != name || d.Size() != sizes[i] {
			t.Errorf("%s: %v %d %q %d", name, err, d, d, d.Size())
		}
	}
	if _, err := ParseDtype("fp16"); !errors.Is(err, ErrFormat) {
		t.Errorf("ParseDtype(fp16): %v", err)
	}
	if d := Dtype(7); d.Valid() || d.Size() != 0 || d.String() != "dtype(7)" {
		t.Errorf("dtype 7: %v %d %q", d.Valid(), d.Size(), d)
	}
}
