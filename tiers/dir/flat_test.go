package dir

import (
	"log/slog"
	"testing"
)

// TestFlatAnswerOlderThanMkdir: a stat that began before a mkdir does not
// leave a flat answer (the rest of the flat answers is the stack's
// TestTreeDirFlat).
func TestFlatAnswerOlderThanMkdir(t *testing.T) {
	d, err := New(Config{Kind: "nvme", Dir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	gen := d.flat.generation()
	d.flat.madeDir("other")
	d.flat.learn("other", "", gen, true)
	if _, ok := d.flat.known("other", ""); ok {
		t.Fatal("a flat answer older than a mkdir was kept")
	}
}
