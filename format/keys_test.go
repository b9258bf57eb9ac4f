package format

import (
	"slices"
	"testing"
)

// keysVectors were computed with the Python of docs/format.md §2.1,
// independently of this package. Meta "meta-llama/Llama-3.1-8B:1:bfloat16:0",
// 4-token blocks, tokens 1..10.
var keysVectors = []struct {
	name string
	keys Keys
	ids  []string
}{
	{"none", Keys{}, []string{"569d97e717439e91327f78b6bd995559", "587a92f328ceeef39b1f7930aeac4775"}},
	{"salt x", Keys{Salt: "x"}, []string{"61cc9a136b8286c70f44026e96e8e5cd", "f5e04e397222ead1120c3fd14ec7e3fe"}},
	{"lora x", Keys{LoRA: "x"}, []string{"3ef57efff12218ff82433d66ae8b6343", "f3325880a7473cbeb148d27bf8f49944"}},
	{"group 1", Keys{Group: 1, HasGroup: true}, []string{"0d4de64d103ed99926b0c66b0f374f3c", "3612907df674e015fefd3f6f58eb4f16"}},
	{"group 0", Keys{HasGroup: true}, []string{"d6e4281584dc1fbd4b573df84f2df3cc", "b8c7775669de05c372973928f083abf5"}},
	{"mm img@5", Keys{MM: []MMKey{{"img", 5}}}, []string{"569d97e717439e91327f78b6bd995559", "225bcd81380428db234fa27bd5d8a0ef"}},
	{"all", Keys{Salt: "tenant-a", LoRA: "sql-adapter", MM: []MMKey{{"f00d", 6}, {"cafe", 1}},
		Embeds: []string{"", "e1"}, Group: 2, HasGroup: true},
		[]string{"dcfa7f7f632b055fff373290a6caee00", "566fa14f3c62d30b734cf32e836c3d75"}},
}

func TestChainKeysGolden(t *testing.T) {
	const meta = "meta-llama/Llama-3.1-8B:1:bfloat16:0"
	tokens := []uint32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, v := range keysVectors {
		if got := idStrings(ChainKeys(meta, 4, tokens, v.keys)); !slices.Equal(got, v.ids) {
			t.Errorf("%s: ChainKeys = %v, want %v", v.name, got, v.ids)
		}
		// Fed in pieces, the hasher gives the same ids.
		h := NewHasherKeys(ChainSeed(meta), 4, v.keys)
		var ids []ID
		for _, tok := range tokens {
			ids = append(ids, h.Add(tok)...)
		}
		if got := idStrings(ids); !slices.Equal(got, v.ids) {
			t.Errorf("%s: Hasher one token at a time = %v, want %v", v.name, got, v.ids)
		}
	}
}

// TestKeysNoAmbiguity checks that a key's tag and length, not only its
// bytes, decide the ids: "LoRA x" is not "salt x", and moving bytes from
// one key to the next changes the ids.
func TestKeysNoAmbiguity(t *testing.T) {
	tokens := []uint32{1, 2, 3, 4}
	seen := map[ID]string{}
	for name, k := range map[string]Keys{
		"none":        {},
		"salt x":      {Salt: "x"},
		"lora x":      {LoRA: "x"},
		"embeds x":    {Embeds: []string{"x"}},
		"salt ab+c":   {Salt: "ab", LoRA: "c"},
		"salt a+bc":   {Salt: "a", LoRA: "bc"},
		"group 0":     {HasGroup: true},
		"group 1":     {Group: 1, HasGroup: true},
		"mm x@0":      {MM: []MMKey{{"x", 0}}},
		"mm x@1":      {MM: []MMKey{{"x", 1}}},
		"salt 0":      {Salt: "0"},
		"salt x+mm":   {Salt: "x", MM: []MMKey{{"y", 0}}},
		"salt x+mm 2": {Salt: "x", MM: []MMKey{{"y", 0}, {"z", 3}}},
	} {
		id := ChainKeys("m", 4, tokens, k)[0]
		if prev, dup := seen[id]; dup {
			t.Errorf("keys %q and %q give the same first id %s", name, prev, id)
		}
		seen[id] = name
	}
}

func TestParseMMKey(t *testing.T) {
	m, err := ParseMMKey("sha256:ab@cd@17")
	if err != nil || m != (MMKey{"sha256:ab@cd", 17}) || m.String() != "sha256:ab@cd@17" {
		t.Errorf("ParseMMKey = %+v, %v", m, err)
	}
	for _, bad := range []string{"", "abc", "@5", "abc@", "abc@-1", "abc@x"} {
		if _, err := ParseMMKey(bad); err == nil {
			t.Errorf("ParseMMKey(%q) succeeded", bad)
		}
	}
}
