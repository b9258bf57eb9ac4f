package dir

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/internal/blocktest"
)

// TestLocateTierFile: a file named by its path is placed in the tier
// directory among its parents, raw when its model is a tree of Files or
// it is a raw block of a raw shard; on a tier that keeps sum files, a
// raw file is checked against its sum.
func TestLocateTierFile(t *testing.T) {
	dir := t.TempDir()
	d, err := New(Config{Kind: "nvme", Dir: dir, Capacity: 1 << 30, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	d.noXattr.Store(true) // CRCs in sum files
	id := format.Chain("meta-llama/Llama-3.1-8B:1:bfloat16:0", 1, []uint32{1, 2, 3, 4})[0]
	files := format.FileKey("f", "abc/de_g0/"+id.String()+id.String()+".bin")
	raw := format.Key{Model: "p", ID: id, Kind: format.RawKind(4)}
	block := format.Key{Model: "m", ID: id, Kind: format.Block}
	data := []byte("sixteen bytes!!!")
	for _, k := range []format.Key{files, raw} {
		blocktest.WriteFile(t, d, k, data)
	}
	if err := os.MkdirAll(filepath.Join(dir, "m", id.Shard()), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, block.Path()), data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		k   format.Key
		raw bool
	}{{files, true}, {raw, true}, {block, false}} {
		got, ok := LocateTierFile(filepath.Join(dir, c.k.Path()))
		if !ok || got.Root != dir || got.Rel != c.k.Path() || got.Raw != c.raw {
			t.Errorf("%s: %+v %v, want root %s, raw %v", c.k.Path(), got, ok, dir, c.raw)
		}
	}
	if _, ok := LocateTierFile(filepath.Join(t.TempDir(), "x")); ok {
		t.Error("a file in no tier directory was placed in one")
	}
	tf, _ := LocateTierFile(filepath.Join(dir, files.Path()))
	if checked, err := tf.CheckKeptSum(); !checked || err != nil {
		t.Fatalf("intact file: checked %v, %v", checked, err)
	}
	p := filepath.Join(dir, files.Path())
	os.Chmod(p, 0o644)
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("S"), 0)
	f.Close()
	if checked, err := tf.CheckKeptSum(); !checked || err == nil {
		t.Fatalf("file damaged in place: checked %v, %v", checked, err)
	}
}
