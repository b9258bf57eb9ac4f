package format

import (
	"errors"
	"strings"
	"testing"
)

// TestFileKey: a File's key names its path, under its model, with an id
// that follows from the path alone.
func TestFileKey(t *testing.T) {
	k := FileKey("vllm", "m_0123456789ab_r0/abc/de_g0/"+strings.Repeat("f", 64)+".bin")
	if k.Path() != "vllm/"+k.Name || k.FileName() != strings.Repeat("f", 64)+".bin" || k.ShardDir() != "m_0123456789ab_r0/abc/de_g0" {
		t.Errorf("path %q, name %q, dir %q", k.Path(), k.FileName(), k.ShardDir())
	}
	if k.ID != FileID(k.Name) || k.ID == FileID(k.Name+"x") || !k.Kind.Valid() || k.Kind.HeaderLen() != 0 || k.Kind.Raw() {
		t.Errorf("id or kind of %v", k)
	}
	if k.ID[0] != FileShard("m_0123456789ab_r0/abc/de_g0") || FileKey("x", "m_0123456789ab_r0/abc/de_g0/other").ID[0] != k.ID[0] {
		t.Errorf("the files of one directory have different shards")
	}
	top := FileKey("m", "config.json")
	if top.ShardDir() != "" || top.FileName() != "config.json" || top.Path() != "m/config.json" {
		t.Errorf("a file at the model's root: %q %q %q", top.ShardDir(), top.FileName(), top.Path())
	}
}

// TestValidateFilePath: clean relative paths of names up to NAME_MAX.
func TestValidateFilePath(t *testing.T) {
	for _, ok := range []string{"a", ".hidden", "a/b/c.tmp", "namespace-0123/x_1_2.bin", strings.Repeat("n", 255), "..a", "a b"} {
		if err := ValidateFilePath(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "/a", "a/", "a//b", "./a", "a/../b", "..", "a\x00b", strings.Repeat("n", 256), strings.Repeat("a/", MaxFilePath)} {
		if err := ValidateFilePath(bad); !errors.Is(err, ErrName) {
			t.Errorf("%q: %v, want ErrName", bad, err)
		}
	}
}

// TestSplitFilePath: a path splits at its last slash, and JoinFilePath
// puts it back.
func TestSplitFilePath(t *testing.T) {
	for _, c := range []struct{ rel, dir, name string }{
		{"a.bin", "", "a.bin"},
		{"d/a.bin", "d", "a.bin"},
		{"m_abc_r0/0ab/cd_g0/" + strings.Repeat("f", 64) + ".bin", "m_abc_r0/0ab/cd_g0", strings.Repeat("f", 64) + ".bin"},
		{"log/123/ucm.log", "log/123", "ucm.log"},
	} {
		dir, name := SplitFilePath(c.rel)
		if dir != c.dir || name != c.name {
			t.Errorf("SplitFilePath(%q) = %q, %q; want %q, %q", c.rel, dir, name, c.dir, c.name)
		}
		if JoinFilePath(dir, name) != c.rel {
			t.Errorf("JoinFilePath(%q, %q) = %q", dir, name, JoinFilePath(dir, name))
		}
	}
}
