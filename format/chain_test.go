package format

import (
	"slices"
	"testing"
)

// chainVectors were computed with Python's hashlib (the script is in
// docs/format.md), independently of this package.
var chainVectors = []struct {
	meta      string
	seed      string
	blockSize int
	tokens    []uint32
	ids       []string
}{
	{
		meta: "meta-llama/Llama-3.1-8B:1:bfloat16:0", seed: "a672925bb4f9fdc205a240402eb4f0d3",
		blockSize: 4, tokens: []uint32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10},
		ids: []string{"569d97e717439e91327f78b6bd995559", "587a92f328ceeef39b1f7930aeac4775"},
	},
	{
		meta: "meta-llama/Llama-3.1-8B:1:bfloat16:0", seed: "a672925bb4f9fdc205a240402eb4f0d3",
		blockSize: 2, tokens: []uint32{0, 255, 256, 65535, 65536, 128000, 4294967295, 7},
		ids: []string{"d156f97b647f2c2283e9937e42111eb6", "fe9a89973c26ccb0c15a7c44e6c21297",
			"fe11fa839f5dbe2099ec497987b3e31d", "0157b0468367bd7d6faa9645fada2bb5"},
	},
	{
		meta: "Qwen/Qwen2.5-7B-Instruct:2:float16:1", seed: "6af8f2fdef1001744616b8847b0829ee",
		blockSize: 3, tokens: []uint32{151643, 300, 70000, 1, 2, 3},
		ids: []string{"590d191296ac65ebbab0ea3ae108079a", "0895a921710d2573138f0aa589039841"},
	},
	{
		meta: "", seed: "6dc1a1de1d31ada433ac2bcab6aad35f",
		blockSize: 1, tokens: []uint32{0},
		ids: []string{"7f10454cf80056383f78e252302ccfee"},
	},
}

func idStrings(ids []ID) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = id.String()
	}
	return out
}

func TestChainGolden(t *testing.T) {
	for _, v := range chainVectors {
		if got := ChainSeed(v.meta).String(); got != v.seed {
			t.Errorf("ChainSeed(%q) = %s, want %s", v.meta, got, v.seed)
		}
		if got := idStrings(Chain(v.meta, v.blockSize, v.tokens)); !slices.Equal(got, v.ids) {
			t.Errorf("Chain(%q, %d, %v) = %v, want %v", v.meta, v.blockSize, v.tokens, got, v.ids)
		}
	}
}

func TestMeta(t *testing.T) {
	if got := Meta("meta-llama/Llama-3.1-8B", 1, "bfloat16", 0); got != "meta-llama/Llama-3.1-8B:1:bfloat16:0" {
		t.Fatalf("Meta = %q", got)
	}
	if got := Meta("Qwen/Qwen2.5-7B-Instruct", 2, "float16", 1); got != chainVectors[2].meta {
		t.Fatalf("Meta = %q", got)
	}
}

func TestChainEdges(t *testing.T) {
	meta := chainVectors[0].meta
	if ids := Chain(meta, 0, []uint32{1, 2}); ids != nil {
		t.Errorf("block size 0: got %v, want nil", ids)
	}
	if ids := Chain(meta, 4, []uint32{1, 2, 3}); len(ids) != 0 {
		t.Errorf("partial block got ids %v", ids)
	}
	// A prefix of the tokens gives a prefix of the ids.
	full := Chain(meta, 4, chainVectors[0].tokens)
	if got := Chain(meta, 4, chainVectors[0].tokens[:7]); !slices.Equal(got, full[:1]) {
		t.Errorf("prefix ids %v, want %v", got, full[:1])
	}
	// NextID from the seed is the first link.
	if got := NextID(ChainSeed(meta), []uint32{1, 2, 3, 4}); got != full[0] {
		t.Errorf("NextID = %s, want %s", got, full[0])
	}
}

func TestHasherStreaming(t *testing.T) {
	v := chainVectors[1]
	want := Chain(v.meta, v.blockSize, v.tokens)
	for _, step := range []int{1, 2, 3, 5, 8} {
		h := NewHasher(ChainSeed(v.meta), v.blockSize)
		var got []ID
		for i := 0; i < len(v.tokens); i += step {
			got = append(got, h.Add(v.tokens[i:min(i+step, len(v.tokens))]...)...)
		}
		if !slices.Equal(got, want) {
			t.Errorf("step %d: %v, want %v", step, idStrings(got), idStrings(want))
		}
		if h.Pending() != 0 || h.Parent() != want[len(want)-1] {
			t.Errorf("step %d: pending %d parent %s", step, h.Pending(), h.Parent())
		}
	}
	h := NewHasher(ChainSeed(v.meta), 3)
	if ids := h.Add(1, 2); ids != nil || h.Pending() != 2 || h.Parent() != ChainSeed(v.meta) {
		t.Errorf("partial add: ids %v pending %d", ids, h.Pending())
	}
}

func TestCRC32C(t *testing.T) {
	// The standard check value of CRC-32C.
	if got := CRC32C([]byte("123456789")); got != 0xe3069283 {
		t.Fatalf("CRC32C(123456789) = %08x, want e3069283", got)
	}
	data := []byte("the quick brown fox jumps over the lazy dog")
	if got := UpdateCRC32C(UpdateCRC32C(0, data[:10]), data[10:]); got != CRC32C(data) {
		t.Fatalf("UpdateCRC32C in two pieces = %08x, want %08x", got, CRC32C(data))
	}
	h := NewCRC32C()
	h.Write(data)
	if h.Sum32() != CRC32C(data) {
		t.Fatalf("NewCRC32C = %08x, want %08x", h.Sum32(), CRC32C(data))
	}
	if s := FormatCRC(0x063b3844); s != "063b3844" {
		t.Fatalf("FormatCRC = %q", s)
	}
	for _, bad := range []string{"", "063b384", "063B3844", "063b38440", "0x3b3844", "063b384g"} {
		if _, ok := ParseCRC(bad); ok {
			t.Errorf("ParseCRC(%q) accepted", bad)
		}
	}
	if v, ok := ParseCRC("063b3844"); !ok || v != 0x063b3844 {
		t.Errorf("ParseCRC = %08x %v", v, ok)
	}
}
