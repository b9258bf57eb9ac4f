package format

import (
	"bytes"
	"encoding/hex"
	"errors"
	"testing"
)

const (
	goldenReprHeader = "55434d5201000000569d97e717439e91327f78b6bd995559" +
		"03000000060000000200000002000000040000001000000044383b06010000008000000000000000"
	goldenReprCRC = 0x063b3844
)

// goldenRepr is a sign-hash sidecar of the golden block: 128-bit codes for
// each of the 4 tokens, 2 layers, 2 heads.
func goldenRepr() (ReprHeader, []byte) {
	h := ReprHeader{ID: goldenID, Kind: ReprSignHash, Dtype: Uint8, NumLayers: 2, NumKVHeads: 2, Rows: 4, Dim: 16, Param: 128}
	payload := make([]byte, 256)
	for i := range payload {
		payload[i] = byte(i * 7)
	}
	return h, payload
}

func TestReprHeaderGolden(t *testing.T) {
	h, payload := goldenRepr()
	file := NewRepr(h, payload)
	if got := hex.EncodeToString(file[:HeaderSize]); got != goldenReprHeader {
		t.Fatalf("header\n got %s\nwant %s", got, goldenReprHeader)
	}
	d, err := DecodeReprHeader(file)
	if err != nil {
		t.Fatal(err)
	}
	want := h
	want.PayloadCRC, want.Flags = goldenReprCRC, FlagCRC
	if d != want {
		t.Fatalf("decoded %+v\nwant %+v", d, want)
	}
	if err := ValidateRepr(d, goldenID, int64(len(file)), func() (uint32, error) { return CRC32C(file[HeaderSize:]), nil }); err != nil {
		t.Fatal(err)
	}
	b, _ := d.MarshalBinary()
	var u ReprHeader
	if err := u.UnmarshalBinary(b); err != nil || u != d || !bytes.Equal(b, file[:HeaderSize]) {
		t.Fatalf("round trip: %v %+v", err, u)
	}
}

func TestDecodeReprHeaderRejects(t *testing.T) {
	h, payload := goldenRepr()
	good := NewRepr(h, payload)[:HeaderSize]
	cases := []struct {
		name string
		edit func(b []byte) []byte
		rule Rule
	}{
		{"short", func(b []byte) []byte { return b[:10] }, RuleSize},
		{"magic", func(b []byte) []byte { copy(b, "UCMB"); return b }, RuleMagic},
		{"version", func(b []byte) []byte { b[4] = 0; return b }, RuleVersion},
		{"kind", func(b []byte) []byte { b[24] = 4; return b }, RuleKind},
		{"dtype", func(b []byte) []byte { b[28] = 200; return b }, RuleDtype},
		{"flags", func(b []byte) []byte { b[52] = 3; return b }, RuleFlags},
		{"reserved", func(b []byte) []byte { b[63] = 1; return b }, RuleReserved},
	}
	for _, c := range cases {
		_, err := DecodeReprHeader(c.edit(bytes.Clone(good)))
		if !errors.Is(err, ErrFormat) || RuleOf(err) != c.rule {
			t.Errorf("%s: err %v (rule %q), want rule %q", c.name, err, RuleOf(err), c.rule)
		}
	}
}

func TestValidateReprRules(t *testing.T) {
	good, _ := goldenRepr()
	good.PayloadCRC, good.Flags = goldenReprCRC, FlagCRC
	size := int64(64 + 256)
	crcOK := func() (uint32, error) { return goldenReprCRC, nil }
	mean := ReprHeader{ID: goldenID, Kind: ReprMean, Dtype: BFloat16, NumLayers: 2, NumKVHeads: 2, Rows: 1, Dim: 4}
	meanSize := int64(64 + 2*2*1*4*2)
	merged := ReprHeader{ID: goldenID, Kind: ReprMerged, Dtype: Float32, NumLayers: 2, NumKVHeads: 2, Rows: 2, Dim: 4, Param: 2}
	mergedSize := int64(64 + 2*2*2*4*4)
	type edit func(ReprHeader) ReprHeader
	cases := []struct {
		name string
		base ReprHeader
		h    edit
		id   ID
		size int64
		rule Rule
	}{
		{"size < 64", good, nil, goldenID, 0, RuleSize},
		{"id differs", good, nil, mustID("0157b0468367bd7d6faa9645fada2bb5"), size, RuleID},
		{"kind unknown", good, func(h ReprHeader) ReprHeader { h.Kind = 5; return h }, goldenID, size, RuleKind},
		{"dtype unknown", good, func(h ReprHeader) ReprHeader { h.Dtype = 8; return h }, goldenID, size, RuleDtype},
		{"unknown flag", good, func(h ReprHeader) ReprHeader { h.Flags = 8; return h }, goldenID, size, RuleFlags},
		{"num_layers 0", good, func(h ReprHeader) ReprHeader { h.NumLayers = 0; return h }, goldenID, size, RuleNumLayers},
		{"num_kv_heads 0", good, func(h ReprHeader) ReprHeader { h.NumKVHeads = 0; return h }, goldenID, size, RuleNumKVHeads},
		{"rows 0", good, func(h ReprHeader) ReprHeader { h.Rows = 0; return h }, goldenID, size, RuleRows},
		{"dim 0", good, func(h ReprHeader) ReprHeader { h.Dim = 0; return h }, goldenID, size, RuleDim},
		{"mean rows 2", mean, func(h ReprHeader) ReprHeader { h.Rows = 2; return h }, goldenID, meanSize * 2, RuleRows},
		{"max param set", mean, func(h ReprHeader) ReprHeader { h.Kind, h.Param = ReprMax, 4; return h }, goldenID, meanSize, RuleParam},
		{"merged without factor", merged, func(h ReprHeader) ReprHeader { h.Param = 0; return h }, goldenID, mergedSize, RuleParam},
		{"signhash not uint8", good, func(h ReprHeader) ReprHeader { h.Dtype = Int8; return h }, goldenID, size, RuleDtype},
		{"signhash bits 0", good, func(h ReprHeader) ReprHeader { h.Param = 0; return h }, goldenID, size, RuleParam},
		{"signhash bits not /8", good, func(h ReprHeader) ReprHeader { h.Param = 127; return h }, goldenID, size, RuleParam},
		{"signhash dim", good, func(h ReprHeader) ReprHeader { h.Param = 64; return h }, goldenID, size, RuleDim},
		{"size differs", good, nil, goldenID, size + 1, RulePayloadSize},
		{"mean size differs", mean, nil, goldenID, meanSize - 1, RulePayloadSize},
		{"shape overflows", good, func(h ReprHeader) ReprHeader { h.NumLayers, h.NumKVHeads, h.Rows = 1<<31, 1<<31, 1<<31; return h }, goldenID, size, RulePayloadSize},
		{"crc", good, func(h ReprHeader) ReprHeader { h.PayloadCRC = 1; return h }, goldenID, size, RuleCRC},
	}
	for _, c := range cases {
		h := c.base
		if c.h != nil {
			h = c.h(h)
		}
		err := ValidateRepr(h, c.id, c.size, crcOK)
		if !errors.Is(err, ErrFormat) || RuleOf(err) != c.rule {
			t.Errorf("%s: err %v (rule %q), want rule %q", c.name, err, RuleOf(err), c.rule)
		}
	}
	for _, ok := range []struct {
		h    ReprHeader
		size int64
	}{{good, size}, {mean, meanSize}, {merged, mergedSize}} {
		if err := ValidateRepr(ok.h, goldenID, ok.size, crcOK); err != nil {
			t.Errorf("valid %s: %v", ok.h.Kind, err)
		}
	}
}

func TestCheckReprForBlock(t *testing.T) {
	blk, _ := goldenBlock() // 2 layers, block_size 4, 2 heads, head_dim 4
	sign, _ := goldenRepr()
	mean := ReprHeader{ID: goldenID, Kind: ReprMean, Dtype: BFloat16, NumLayers: 2, NumKVHeads: 2, Rows: 1, Dim: 4}
	merged := ReprHeader{ID: goldenID, Kind: ReprMerged, Dtype: BFloat16, NumLayers: 2, NumKVHeads: 2, Rows: 2, Dim: 4, Param: 2}
	for _, r := range []ReprHeader{sign, mean, merged} {
		if err := CheckReprForBlock(r, blk); err != nil {
			t.Errorf("%s: %v", r.Kind, err)
		}
	}
	odd := merged
	odd.Param, odd.Rows = 3, 2 // 4 / 3 rounded up
	if err := CheckReprForBlock(odd, blk); err != nil {
		t.Errorf("merge 3: %v", err)
	}
	cases := []struct {
		name string
		r    ReprHeader
		edit func(*ReprHeader)
		rule Rule
	}{
		{"id", mean, func(r *ReprHeader) { r.ID[0] ^= 1 }, RuleID},
		{"layers", mean, func(r *ReprHeader) { r.NumLayers = 3 }, RuleNumLayers},
		{"heads", mean, func(r *ReprHeader) { r.NumKVHeads = 1 }, RuleNumKVHeads},
		{"dim", mean, func(r *ReprHeader) { r.Dim = 8 }, RuleDim},
		{"rows", merged, func(r *ReprHeader) { r.Rows = 4 }, RuleRows},
	}
	for _, c := range cases {
		r := c.r
		c.edit(&r)
		if err := CheckReprForBlock(r, blk); RuleOf(err) != c.rule {
			t.Errorf("%s: err %v, want rule %q", c.name, err, c.rule)
		}
	}
}

func TestReprKind(t *testing.T) {
	for i, name := range []string{"mean", "max", "merged", "signhash"} {
		k, err := ParseReprKind(name)
		if err != nil || k != ReprKind(i) || k.String() != name {
			t.Errorf("%s: %v %d %q", name, err, k, k)
		}
	}
	if _, err := ParseReprKind("avg"); !errors.Is(err, ErrFormat) {
		t.Errorf("ParseReprKind(avg): %v", err)
	}
	if k := ReprKind(4); k.Valid() || k.String() != "kind(4)" {
		t.Errorf("kind 4: %q", k)
	}
}
