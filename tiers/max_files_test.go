package tiers

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/ucmfs/ucmfs/format"
)

// tierFiles counts the files in directory d of model e on a tier.
func tierFiles(t *testing.T, dir string) int {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(dir, "e", "d"))
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// TestMaxFiles: tiny and empty files, many more than a tier's MaxFiles,
// each written through: no tier ever holds more than its bound (the
// memory tier's index, the directory tier's index and its directory),
// the newest are all there, the oldest went as from a full tier. A tier
// reopened with a lower bound is brought under it by demotion.
func TestMaxFiles(t *testing.T) {
	dir := t.TempDir()
	s := buildStack(t, StackConfig{}, MemConfig{Capacity: 64 << 20, MaxFiles: 20},
		DirConfig{Kind: "nvme", Dir: dir, Capacity: 1 << 30, MaxFiles: 30})
	key := func(i int) format.Key { return format.FileKey("e", fmt.Sprintf("d/f%d.bin", i)) }
	const n = 200
	for i := range n {
		if _, err := s.Put(key(i), make([]byte, i%2*100), true); err != nil {
			t.Fatalf("file %d: %v", i, err)
		}
		if m, d := s.mem.Usage().Files, s.dirs[0].Usage().Files; m > 20 || d > 30 {
			t.Fatalf("after file %d: %d files in memory (bound 20), %d on nvme (bound 30)", i, m, d)
		}
	}
	if got := tierFiles(t, dir); got > 30 {
		t.Fatalf("%d files in the tier directory, bound 30", got)
	}
	for i := n - 20; i < n; i++ {
		if !s.Has(key(i)) {
			t.Fatalf("file %d of the last 20 is gone", i)
		}
	}
	if s.Has(key(0)) {
		t.Fatal("the oldest file stayed past both bounds")
	}
	if err := s.Close(t.Context()); err != nil {
		t.Fatal(err)
	}

	s = buildStack(t, StackConfig{}, MemConfig{Capacity: 64 << 20},
		DirConfig{Kind: "nvme", Dir: dir, Capacity: 1 << 30, MaxFiles: 10})
	d := dirTier(s, 0)
	if !d.OverHigh() {
		t.Fatalf("reopened with %d files, bound 10: not over the high watermark", d.Usage().Files)
	}
	s.demote(0)
	if u := d.Usage(); float64(u.Files) > d.LowWatermark()*10 {
		t.Fatalf("after demotion %d files, low watermark %.0f", u.Files, d.LowWatermark()*10)
	}
	if !s.Has(key(n - 1)) {
		t.Fatal("demotion dropped the newest file")
	}
}
