package store

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/layout/files"
	"github.com/ucmfs/ucmfs/tiers"
	"github.com/ucmfs/ucmfs/tiers/rootfs/crashfs"
	"golang.org/x/sys/unix"
)

// filesOnCrashDisk is a store over a new crash disk (shm its memory
// tier's directory) with the files model e.
func filesOnCrashDisk(t *testing.T) (disk *crashfs.Disk, shm string, s *Store, st *tiers.Stack) {
	t.Helper()
	disk, err := crashfs.New(filepath.Join(t.TempDir(), "nvme"))
	if err != nil {
		t.Fatal(err)
	}
	shm = t.TempDir()
	s, st = crashStore(t, disk, shm)
	s.Models().Add("e")
	if err := s.setLayout("e", files.Name); err != nil {
		t.Fatal(err)
	}
	return disk, shm, s, st
}

// filesWithOneFile is filesOnCrashDisk with the directory a holding
// x.bin ("x").
func filesWithOneFile(t *testing.T) (disk *crashfs.Disk, shm string, s *Store, st *tiers.Stack) {
	t.Helper()
	disk, shm, s, st = filesOnCrashDisk(t)
	if err := s.FilesMkdir("e", "a", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := publish(t, s, format.FileKey("e", "a/x.bin"), []byte("x")); err != nil {
		t.Fatal(err)
	}
	return disk, shm, s, st
}

// leftMoveStore is a store over a crash disk whose model e (files) has
// the directory a holding x.bin and c holding y.bin, durable, and whose
// move of a to b could not drop its record at the end: the settings
// record is refused (EDQUOT) from the move's first step at b on, until
// heal. reopen closes the store and opens it again over the disk.
func leftMoveStore(t *testing.T) (s *Store, heal func(), reopen func() *Store) {
	t.Helper()
	ctx := context.Background()
	disk, shm, s, st := filesOnCrashDisk(t)
	for _, d := range []string{"a", "c"} {
		if err := s.FilesMkdir("e", d, 0); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"a/x.bin", "c/y.bin"} {
		if _, err := publish(t, s, format.FileKey("e", f), []byte("bytes of "+f)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Flush(ctx, "e"); err != nil {
		t.Fatal(err)
	}
	var full atomic.Bool
	disk.SetFault(func(op, rel string) error {
		if (op == "mkdir" || op == "link") && strings.HasPrefix(rel, "e/b") {
			full.Store(true) // recorded: the move's first step
		}
		if full.Load() && strings.Contains(rel, tiers.ModelMetaName) {
			return &os.PathError{Op: op, Path: rel, Err: unix.EDQUOT}
		}
		return nil
	})
	if err := s.MoveFilesDir(ctx, "e", "a", "e", "b", 0); err != nil {
		t.Fatal(err)
	}
	rec, err := os.ReadFile(filepath.Join(disk.Dir(), "e", tiers.ModelMetaName))
	if err != nil || !strings.Contains(string(rec), `"from":"a"`) {
		t.Fatalf("the move's record is not left on the tier (%v): %s", err, rec)
	}
	reopen = func() *Store {
		t.Helper()
		s.Close()
		if err := st.Close(ctx); err != nil {
			t.Fatal(err)
		}
		s, st = crashStore(t, disk, shm)
		t.Cleanup(func() { s.Close(); st.Close(ctx) })
		return s
	}
	return s, func() { disk.SetFault(nil) }, reopen
}

// readFile returns the bytes of the File name of model e, or an error.
func readFile(s *Store, name string) (string, error) {
	h, err := s.stack.Open(format.FileKey("e", name))
	if err != nil {
		return "", err
	}
	defer h.File.Close()
	b, err := io.ReadAll(io.NewSectionReader(h.File, 0, h.Size))
	return string(b), err
}

// TestMoveRecordLeftKeepsNewFilesInPlace (store soak seed
// 1796662221591818150, move-record-left): a directory move whose record
// could not be dropped at its end (the tier full for the settings
// record) leaves nothing to move at the next start. While the record is
// left, nothing is published beneath the old name (a file published,
// moved there, a directory made or moved there: the tier's error); once
// the settings record can be written again, a file published there
// drops the record first, and stays there at the next start. Before, it
// was published at once, and the next start finished the move again,
// with the new file: a/later.bin was found as b/later.bin.
func TestMoveRecordLeftKeepsNewFilesInPlace(t *testing.T) {
	ctx := context.Background()
	s, heal, reopen := leftMoveStore(t)
	full := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, ErrFull) {
			t.Errorf("%s beneath the old name while its record is left: %v, want the tier's ErrFull", what, err)
		}
	}
	full("mkdir", s.FilesMkdir("e", "a", 0))
	_, err := publish(t, s, format.FileKey("e", "a/new.bin"), []byte("new"))
	full("publish", err)
	full("move of a file", s.Writes().Move(ctx, format.FileKey("e", "c/y.bin"), format.FileKey("e", "a/y.bin")))
	full("move of a directory", s.MoveFilesDir(ctx, "e", "c", "e", "a", 0))
	if _, err := publish(t, s, format.FileKey("e", "c/z.bin"), []byte("z")); err != nil {
		t.Errorf("publish elsewhere: %v", err)
	}

	heal()
	if err := s.FilesMkdir("e", "a", 0); err != nil && !errors.Is(err, ErrExist) {
		t.Fatal(err)
	}
	if _, err := publish(t, s, format.FileKey("e", "a/later.bin"), []byte("later")); err != nil {
		t.Fatalf("publish beneath the old name, the tier healed: %v", err)
	}
	s = reopen()
	if got, err := readFile(s, "a/later.bin"); got != "later" || err != nil {
		t.Errorf("a/later.bin after the restart: %q %v", got, err)
	}
	if s.stack.HasKey(format.FileKey("e", "b/later.bin")) {
		t.Error("a/later.bin was moved to b/later.bin by the restart")
	}
	if got, err := readFile(s, "b/x.bin"); got != "bytes of a/x.bin" || err != nil {
		t.Errorf("b/x.bin after the restart: %q %v", got, err)
	}
	if moves := s.modelSettings("e").Moves; len(moves) != 0 {
		t.Errorf("the record still holds %v", moves)
	}
}

// TestMoveRecordLeftDroppedBySettingsWrite: a record left is dropped by
// the next write of the model's settings that succeeds, for whatever
// reason (here its quota): the store forgets it, and the tier's record
// holds no move.
func TestMoveRecordLeftDroppedBySettingsWrite(t *testing.T) {
	s, heal, reopen := leftMoveStore(t)
	if s.leftMoves.n.Load() != 1 {
		t.Fatalf("%d records left, want 1", s.leftMoves.n.Load())
	}
	heal()
	if err := s.Models().SetQuota("e", 1<<30, 0); err != nil {
		t.Fatal(err)
	}
	if n := s.leftMoves.n.Load(); n != 0 {
		t.Errorf("%d records left after the write", n)
	}
	if moves := reopen().modelSettings("e").Moves; len(moves) != 0 {
		t.Errorf("the tier's record holds %v", moves)
	}
}

// TestUnfinishedMoveDroppedByPublishBeneath: a move a crash cut short
// that the next start could not finish (a tier refused the directory at
// the new name) keeps its record for the start after, but a file
// published beneath its old name meanwhile drops the record first: that
// start leaves it where it was published (and the move as it stands).
// Before, the start after finished the move with the new file.
func TestUnfinishedMoveDroppedByPublishBeneath(t *testing.T) {
	ctx := context.Background()
	disk, shm, s, st := filesWithOneFile(t)
	// The move a → b, cut short before its first step.
	if err := s.recordDirMove("e", DirMoveRecord{From: "a", ToModel: "e", To: "b"}); err != nil {
		t.Fatal(err)
	}
	restart := func() {
		t.Helper()
		s.Close()
		if err := st.Close(ctx); err != nil {
			t.Fatal(err)
		}
		s, st = crashStore(t, disk, shm)
	}
	disk.SetFault(func(op, rel string) error {
		if op == "mkdir" && strings.HasPrefix(rel, "e/b") {
			return &os.PathError{Op: op, Path: rel, Err: unix.EDQUOT}
		}
		return nil
	})
	restart()
	disk.SetFault(nil)
	if moves := s.modelSettings("e").Moves; len(moves) != 1 {
		t.Fatalf("the start finished the move it was to fail: the record holds %v", moves)
	}
	if _, err := publish(t, s, format.FileKey("e", "a/later.bin"), []byte("later")); err != nil {
		t.Fatal(err)
	}
	restart()
	defer st.Close(ctx)
	defer s.Close()
	for _, f := range []string{"a/x.bin", "a/later.bin"} {
		if _, err := readFile(s, f); err != nil {
			t.Errorf("%s after the restart: %v", f, err)
		}
	}
	if s.stack.HasKey(format.FileKey("e", "b/later.bin")) {
		t.Error("a/later.bin was moved to b/later.bin by the restart")
	}
	if moves := s.modelSettings("e").Moves; len(moves) != 0 {
		t.Errorf("the record still holds %v", moves)
	}
}

// TestFailedMoveRecordLeftNotFinished (store soak seed
// 1796673849428973367, move-record-left): a directory move that failed
// (EIO making its new name) and was undone, its record left on the tier
// (the settings record refused), is not finished by the next start once
// the tier takes writes again before the stop: a flush of every model
// (the daemon's clean stop, `.ucm/flush`) or the store's Close drops the
// record. Before, the record stayed until some other write of the
// model's settings, and the next start moved a/x.bin, which the caller
// was told stayed where it was, to b/x.bin.
func TestFailedMoveRecordLeftNotFinished(t *testing.T) {
	for _, how := range []string{"Flush", "Close"} {
		t.Run(how, func(t *testing.T) {
			ctx := context.Background()
			disk, shm, s, st := filesWithOneFile(t)
			if err := s.Flush(ctx, "e"); err != nil {
				t.Fatal(err)
			}
			var failed atomic.Bool
			disk.SetFault(func(op, rel string) error {
				if op == "mkdir" && strings.HasPrefix(rel, "e/b") {
					failed.Store(true)
					return &os.PathError{Op: op, Path: rel, Err: unix.EIO}
				}
				if failed.Load() && strings.Contains(rel, tiers.ModelMetaName) {
					return &os.PathError{Op: op, Path: rel, Err: unix.EDQUOT}
				}
				return nil
			})
			if err := s.MoveFilesDir(ctx, "e", "a", "e", "b", 0); err == nil {
				t.Fatal("the move succeeded with its new name refused")
			}
			if s.leftMoves.n.Load() != 1 {
				t.Fatalf("%d records left, want 1", s.leftMoves.n.Load())
			}
			disk.SetFault(nil)
			// The tier takes writes again once its probe finds it so.
			for end := time.Now().Add(30 * time.Second); st.Tiers()[1].Health == tiers.Down; time.Sleep(10 * time.Millisecond) {
				if time.Now().After(end) {
					t.Fatal("the tier did not come back in 30 s")
				}
			}
			if how == "Flush" {
				if err := s.Flush(ctx, ""); err != nil {
					t.Fatal(err)
				}
				rec, err := os.ReadFile(filepath.Join(disk.Dir(), "e", tiers.ModelMetaName))
				if err != nil || strings.Contains(string(rec), `"from":"a"`) {
					t.Errorf("after the flush, the tier's record (%v): %s", err, rec)
				}
			}
			s.Close()
			if err := st.Close(ctx); err != nil {
				t.Fatal(err)
			}
			s, st = crashStore(t, disk, shm)
			defer st.Close(ctx)
			defer s.Close()
			if got, err := readFile(s, "a/x.bin"); got != "x" || err != nil {
				t.Errorf("a/x.bin after the restart: %q %v", got, err)
			}
			if s.stack.HasKey(format.FileKey("e", "b/x.bin")) {
				t.Error("the restart finished the move that failed: b/x.bin")
			}
		})
	}
}
