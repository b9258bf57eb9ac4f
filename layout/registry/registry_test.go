package registry

import (
	"errors"
	"testing"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/layout"
)

// TestTable: every layout is found by its name and by its keys' kinds,
// the default is ucmb, and an unknown name is refused.
func TestTable(t *testing.T) {
	if Default().Name() != "ucmb" {
		t.Fatalf("default %s", Default().Name())
	}
	for _, name := range Names() {
		if l, ok := ByName(name); !ok || l.Name() != name {
			t.Errorf("ByName(%q) = %v, %v", name, l, ok)
		}
	}
	if _, err := Parse("nope"); err == nil || err.Error() != `layout "nope": want ucmb, ucm-posix or files` {
		t.Errorf("Parse: %v", err)
	}
	for kind, want := range map[format.Kind]string{format.Block: "ucmb", format.Repr: "ucmb", format.RawKind(0): "ucm-posix", format.RawKind(4): "ucm-posix", format.File: "files"} {
		if l := Of(format.Key{Kind: kind}); l == nil || l.Name() != want {
			t.Errorf("Of(kind %d) = %v, want %s", kind, l, want)
		}
	}
	if Find(layout.Layout.Tree).Name() != "files" {
		t.Error("the tree layout is not files")
	}
}

// TestParseNames: each layout parses its own names, final and staging,
// and refuses the others'.
func TestParseNames(t *testing.T) {
	id := format.ID{0xab, 0xcd}
	ucmb, _ := ByName("ucmb")
	posix, _ := ByName("ucm-posix")
	files, _ := ByName("files")
	for _, c := range []struct {
		l         layout.Layout
		dir, name string
		want      format.Key
		staging   bool
	}{
		{ucmb, "ab", id.String() + ".bin", format.Key{Model: "m", ID: id, Kind: format.Block}, false},
		{ucmb, "ab", id.String() + ".repr.tmp", format.Key{Model: "m", ID: id, Kind: format.Repr}, true},
		{posix, "abc", id.String(), format.Key{Model: "m", ID: id, Kind: format.RawKind(3)}, false},
		{posix, "data", id.String() + ".tmp", format.Key{Model: "m", ID: id, Kind: format.RawKind(0)}, true},
		{files, "d", "x.bin_1.tmp", format.FileKey("m", "d/x.bin_1.tmp"), true},
		{files, "", "x.bin", format.FileKey("m", "x.bin"), false},
	} {
		k, staging, err := c.l.ParseName("m", c.dir, c.name)
		if err != nil || k != c.want || staging != c.staging {
			t.Errorf("%s: %s/%s = %v %v %v", c.l.Name(), c.dir, c.name, k, staging, err)
		}
		if c.staging {
			continue
		}
		if k, err := c.l.ParsePath("m", format.JoinFilePath(c.dir, c.name)); err != nil || k != c.want || k.Path() != "m/"+format.JoinFilePath(c.dir, c.name) {
			t.Errorf("%s: ParsePath %s/%s = %v %v", c.l.Name(), c.dir, c.name, k, err)
		}
	}
	if _, _, err := ucmb.ParseName("m", "ab", id.String()); !errors.Is(err, format.ErrName) {
		t.Errorf("ucmb took a raw name: %v", err)
	}
	if _, _, err := posix.ParseName("m", "abc", id.String()+".bin"); !errors.Is(err, format.ErrName) {
		t.Errorf("ucm-posix took a .bin: %v", err)
	}
}
