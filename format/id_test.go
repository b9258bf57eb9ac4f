package format

import (
	"errors"
	"strings"
	"testing"
)

func TestParseID(t *testing.T) {
	const s = "569d97e717439e91327f78b6bd995559"
	id, err := ParseID(s)
	if err != nil || id.String() != s || id.Shard() != "56" || id[0] != 0x56 || id[15] != 0x59 {
		t.Fatalf("ParseID(%s) = %s, %v", s, id, err)
	}
	for _, bad := range []string{
		"", "569d97e7", s + "0", s[:31],
		strings.ToUpper(s), "569d97e717439e91327f78b6bd99555g", "569d97e717439e91327f78b6bd99555 ",
	} {
		if _, err := ParseID(bad); !errors.Is(err, ErrName) {
			t.Errorf("ParseID(%q) = %v, want ErrName", bad, err)
		}
	}
}

func TestShard(t *testing.T) {
	for b := 0; b < 256; b++ {
		name := ShardName(byte(b))
		got, ok := ParseShard(name)
		if !ok || got != byte(b) || len(name) != 2 {
			t.Fatalf("shard %d: %q -> %d %v", b, name, got, ok)
		}
	}
	for _, bad := range []string{"", "0", "000", "AB", "g0", "-1", "0x"} {
		if _, ok := ParseShard(bad); ok {
			t.Errorf("ParseShard(%q) accepted", bad)
		}
	}
}

func TestValidateModel(t *testing.T) {
	good := []string{"a", "meta-llama--Llama-3.1-8B", "Qwen2.5_7B", "x.", "9", strings.Repeat("m", MaxModelLen)}
	for _, m := range good {
		if err := ValidateModel(m); err != nil {
			t.Errorf("ValidateModel(%q) = %v", m, err)
		}
	}
	bad := []string{
		"", strings.Repeat("m", MaxModelLen+1), ".hidden", ".", "..", "a/b", "a b", "a:b",
		"ünïcode", "tab\t", "nul\x00", "star*", "a%2F",
	}
	for _, m := range bad {
		if err := ValidateModel(m); !errors.Is(err, ErrName) {
			t.Errorf("ValidateModel(%q) = %v, want ErrName", m, err)
		}
	}
}

func TestEscapeModel(t *testing.T) {
	got, err := EscapeModel("meta-llama/Llama-3.1-8B")
	if err != nil || got != "meta-llama--Llama-3.1-8B" {
		t.Fatalf("EscapeModel = %q, %v", got, err)
	}
	if back := UnescapeModel(got); back != "meta-llama/Llama-3.1-8B" {
		t.Fatalf("UnescapeModel = %q", back)
	}
	for _, bad := range []string{".org/x", "a b/c", "", "org/x:y"} {
		if got, err := EscapeModel(bad); !errors.Is(err, ErrName) {
			t.Errorf("EscapeModel(%q) = %q, %v, want ErrName", bad, got, err)
		}
	}
	// "/abs" escapes to "--abs": legal bytes, not starting with '.'.
	if got, err := EscapeModel("/abs"); err != nil || got != "--abs" {
		t.Errorf("EscapeModel(/abs) = %q, %v", got, err)
	}
	if _, err := EscapeModel(strings.Repeat("ab/", 67)); !errors.Is(err, ErrName) {
		t.Errorf("EscapeModel of a 201+ byte result accepted")
	}
}

func TestParseFileName(t *testing.T) {
	const s = "569d97e717439e91327f78b6bd995559"
	for _, c := range []struct {
		hh, name string
		kind     Kind
	}{{"56", s + ".bin", Block}, {"56", s + ".repr", Repr}, {"", s + ".bin", Block}} {
		id, kind, err := ParseFileName(c.hh, c.name)
		if err != nil || id.String() != s || kind != c.kind {
			t.Errorf("ParseFileName(%q, %q) = %s %d %v", c.hh, c.name, id, kind, err)
		}
	}
	for _, c := range [][2]string{
		{"57", s + ".bin"}, // shard mismatch
		{"57", s},          // a raw name outside its shard
		{"", s},            // a raw name needs its shard
		{"56", s + ".tmp"},
		{"56", "." + s + ".bin"},
		{"56", s + ".BIN"},
		{"56", ".bin"},
		{"56", s[:30] + ".bin"},
	} {
		if _, _, err := ParseFileName(c[0], c[1]); !errors.Is(err, ErrName) {
			t.Errorf("ParseFileName(%q, %q) = %v, want ErrName", c[0], c[1], err)
		}
	}
}

func TestKeyAndParsePath(t *testing.T) {
	id := mustID("569d97e717439e91327f78b6bd995559")
	k := Key{Model: "meta-llama--Llama-3.1-8B", ID: id, Kind: Repr}
	want := "meta-llama--Llama-3.1-8B/56/569d97e717439e91327f78b6bd995559.repr"
	if k.Path() != want || k.String() != want || k.FileName() != id.String()+".repr" {
		t.Fatalf("Path = %q", k.Path())
	}
	got, err := ParsePath(want)
	if err != nil || got != k {
		t.Fatalf("ParsePath = %+v, %v", got, err)
	}
	if got, err := ParsePath("m/56/" + id.String() + ".bin"); err != nil || got.Kind != Block || got.Model != "m" {
		t.Fatalf("ParsePath bin = %+v, %v", got, err)
	}
	for _, bad := range []string{
		"", "m", "m/56", "/m/56/" + id.String() + ".bin", "m/56/" + id.String() + ".bin/x",
		".m/56/" + id.String() + ".bin", "a b/56/" + id.String() + ".bin",
		strings.Repeat("m", 201) + "/56/" + id.String() + ".bin",
		"m/57/" + id.String() + ".bin", "m/5/" + id.String() + ".bin", "m/AB/" + id.String() + ".bin",
		"m/56/" + id.String() + ".txt",
	} {
		if _, err := ParsePath(bad); !errors.Is(err, ErrName) {
			t.Errorf("ParsePath(%q) = %v, want ErrName", bad, err)
		}
	}
}

func TestKindExt(t *testing.T) {
	if Block.Ext() != ".bin" || Repr.Ext() != ".repr" {
		t.Fatal(Block.Ext(), Repr.Ext())
	}
}
