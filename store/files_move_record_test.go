package store

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/layout/files"
)

// TestDirMoveFinishedAfterCrash: a directory move a crash cut short, its
// record in the model's settings and its files half moved (one under its
// new path only, one under both, one under its old path only, in a
// subdirectory), is finished at the next start: every file under its new
// path with its bytes, nothing under the old one, the old directories
// gone from the tier, the record dropped. Before, the files stayed under
// either path and the directory was at both names.
func TestDirMoveFinishedAfterCrash(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	open := storeOver(t, dir, Options{Layout: files.Name})
	s, st := open()
	s.Models().Add("e")
	for _, d := range []string{"a", "a/sub", "b", "b/sub"} {
		if err := s.FilesMkdir("e", d, 0); err != nil {
			t.Fatal(err)
		}
	}
	files := []string{"x.bin", "y.bin", "sub/z.bin"}
	for _, f := range files {
		if _, err := publish(t, s, format.FileKey("e", "a/"+f), []byte("bytes of "+f)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Flush(ctx, "e"); err != nil {
		t.Fatal(err)
	}
	// The move a → b, cut short: recorded, x moved, y published under
	// its new path (durable) but not yet gone from its old one.
	if err := s.recordDirMove("e", DirMoveRecord{From: "a", ToModel: "e", To: "b"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Writes().Move(ctx, format.FileKey("e", "a/x.bin"), format.FileKey("e", "b/x.bin")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.copyFile(format.FileKey("e", "a/y.bin"), format.FileKey("e", "b/y.bin"), false); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx, "e"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if err := st.Close(ctx); err != nil {
		t.Fatal(err)
	}

	s, st = open()
	defer st.Close(ctx)
	defer s.Close()
	for _, f := range files {
		h, err := st.Open(format.FileKey("e", "b/"+f))
		if err != nil {
			t.Errorf("b/%s after the restart: %v", f, err)
			continue
		}
		got, _ := io.ReadAll(io.NewSectionReader(h.File, 0, h.Size))
		h.File.Close()
		if string(got) != "bytes of "+f {
			t.Errorf("b/%s reads %q", f, got)
		}
		if st.HasKey(format.FileKey("e", "a/"+f)) {
			t.Errorf("a/%s is still there", f)
		}
	}
	if s.FilesDir("e", "a") {
		t.Error("the old directory is still a directory of the model")
	}
	if subdirs, _ := s.FilesList("e", ""); !slices.Equal(subdirs, []string{"b"}) {
		t.Errorf("the model's root holds %v, want [b]", subdirs)
	}
	if _, err := os.Stat(filepath.Join(dir, "e", "a")); !os.IsNotExist(err) {
		t.Errorf("the old directory on the tier: %v", err)
	}
	if moves := s.modelSettings("e").Moves; len(moves) != 0 {
		t.Errorf("the record still holds %v", moves)
	}
}
