package store

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/layout/files"
	"github.com/ucmfs/ucmfs/tiers"
	"github.com/ucmfs/ucmfs/tiers/rootfs/crashfs"
)

// The regressions of the store soak (soak_test.go): each a seed's
// finding, fixed.

// crashStore opens a store over a 256 KiB memory tier and an nvme tier on
// disk that fsyncs only what it is asked to (the caller closes both).
func crashStore(t *testing.T, disk *crashfs.Disk, shm string) (*Store, *tiers.Stack) {
	return crashStoreWith(t, disk, shm, false)
}

// afterPowerCut cuts the power of disk under s and st, closes both,
// restores the disk to what was durable and opens a store over it again
// (closed after the test), writing through when wt.
func afterPowerCut(t *testing.T, disk *crashfs.Disk, s *Store, st *tiers.Stack, wt bool) (*Store, *tiers.Stack) {
	t.Helper()
	disk.PowerCut()
	s.Close()
	st.Close(context.Background())
	if err := disk.Restore(); err != nil {
		t.Fatal(err)
	}
	s, st = crashStoreWith(t, disk, t.TempDir(), wt)
	t.Cleanup(func() { s.Close(); st.Close(context.Background()) })
	return s, st
}

// crashStoreWith is crashStore, the stack writing through when wt.
func crashStoreWith(t *testing.T, disk *crashfs.Disk, shm string, wt bool) (*Store, *tiers.Stack) {
	t.Helper()
	no := false
	log := soakLogger(nil)
	st, err := tiers.New(tiers.StackConfig{Logger: log, WriteThrough: wt, DirtyExpire: time.Hour}, tiers.MemConfig{Capacity: 256 << 10, Dir: shm, Logger: log},
		tiers.DirConfig{Kind: "nvme", Dir: disk.Dir(), SyncOnCommit: &no, OpenFS: disk.Open, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(st, Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	return s, st
}

// TestFlushedAfterWriteBackSurvivesPowerCut (store soak seed
// 1796656337283439924): a block written back to the nvme tier without
// an fsync (to make room in memory for others), then flushed (FlushKeys, an fsync of
// its directory; Flush, .ucm/flush), is there after a power cut. It was
// gone: the flush's syncfs, which makes what was written back earlier
// durable, synced the tier's directory by its path, around the
// filesystem the tier stands on (its rootfs.FS), so that filesystem was
// never asked.
func TestFlushedAfterWriteBackSurvivesPowerCut(t *testing.T) {
	for _, how := range []string{"FlushKeys", "Flush"} {
		t.Run(how, func(t *testing.T) {
			base := t.TempDir()
			disk, err := crashfs.New(filepath.Join(base, "nvme"))
			if err != nil {
				t.Fatal(err)
			}
			s, st := crashStore(t, disk, t.TempDir())
			k, _ := testBlock(0, 0)
			// The first written back to make room: the fourth block
			// needs it, unless a writer found room otherwise (a loaded
			// machine's background write-back picks its own order), so
			// more blocks follow until it is, a bounded number.
			for n := 0; n < 16 && (n < 4 || st.TierHolds(tiers.Memory, k) || !st.TierHolds(1, k)); n++ {
				k, data := testBlock(n, 100<<10)
				if _, err := publishDraft(s, k, data); err != nil {
					t.Fatal(err)
				}
			}
			if st.TierHolds(tiers.Memory, k) || !st.TierHolds(1, k) {
				t.Fatalf("%s not written back to make room", k)
			}
			if how == "Flush" {
				err = s.Flush(context.Background(), "")
			} else {
				err = s.FlushKeys(context.Background(), []format.Key{k})
			}
			if err != nil {
				t.Fatal(err)
			}
			_, st = afterPowerCut(t, disk, s, st, false)
			if _, err := st.Stat(k); err != nil {
				t.Fatalf("%s flushed (%s) after its write-back, then a power cut: %v", k, how, err)
			}
		})
	}
}

// publishDraft writes data as key through Writes, as a create, a write
// and a close of the adapter do.
func publishDraft(s *Store, key format.Key, data []byte) (bool, error) {
	p := Proc{Tgid: 1}
	_, d, err := s.Writes().Begin(p, key, key.FileName(), OpenMode{})
	if err != nil {
		return false, err
	}
	defer d.Release(context.Background())
	if _, err := d.WriteAt(data, 0); err != nil {
		return false, err
	}
	return d.Close(context.Background(), p.Tgid)
}

// TestMovedOverDurableVersionSurvivesPowerCut (store soak seed
// 1796657321693231763): a File acknowledged durable, then written again
// (the new version in memory alone) and renamed (Writes.Move), is under
// one of its two names after a flush of something else and a power cut.
// It was under neither: the move took the new version for in memory
// alone and so made its copy no more durable than that, while the removal
// of the old name took the durable version's file off the tier, and the
// next syncfs made that removal durable.
func TestMovedOverDurableVersionSurvivesPowerCut(t *testing.T) {
	base := t.TempDir()
	disk, err := crashfs.New(filepath.Join(base, "nvme"))
	if err != nil {
		t.Fatal(err)
	}
	s, st := crashStore(t, disk, t.TempDir())
	s.Models().Add("fm")
	if err := s.setLayout("fm", files.Name); err != nil {
		t.Fatal(err)
	}
	if err := s.FilesMkdir("fm", "d", 0); err != nil {
		t.Fatal(err)
	}
	from, to := format.FileKey("fm", "d/f.bin"), format.FileKey("fm", "d/g.bin")
	if _, err := publishDraft(s, from, []byte("the durable version")); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.FlushKeys(ctx, []format.Key{from}); err != nil {
		t.Fatal(err)
	}
	if _, err := publishDraft(s, from, []byte("a new version, in memory alone")); err != nil {
		t.Fatal(err)
	}
	if err := s.Writes().Move(ctx, from, to); err != nil {
		t.Fatal(err)
	}
	if err := s.FlushKeys(ctx, nil); err != nil { // a flush of something else: its syncfs
		t.Fatal(err)
	}
	_, st = afterPowerCut(t, disk, s, st, false)
	if !st.Has(from) && !st.Has(to) {
		t.Fatalf("after the move and a power cut neither %s nor %s is there", from, to)
	}
}

// TestDirMadeAgainSurvivesPowerCut (store soak seed 1796676393920129247,
// older): a File written through into a directory of a files model that
// a directory move had removed and a mkdir made again is there after a
// power cut. It was gone with its directory: the directory tier still
// took the directory for made durable (its cache of directories whose
// names are durable, from before the move), so neither the mkdir nor
// the publish fsynced the model directory that names it.
func TestDirMadeAgainSurvivesPowerCut(t *testing.T) {
	ctx := context.Background()
	disk, err := crashfs.New(filepath.Join(t.TempDir(), "nvme"))
	if err != nil {
		t.Fatal(err)
	}
	s, st := crashStoreWith(t, disk, t.TempDir(), true)
	s.Models().Add("fm")
	if err := s.setLayout("fm", files.Name); err != nil {
		t.Fatal(err)
	}
	if err := s.FilesMkdir("fm", "d1", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := publishDraft(s, format.FileKey("fm", "d1/f.bin"), []byte("first")); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if err := s.MoveFilesDir(ctx, "fm", "d1", "fm", "d0", 0); err != nil {
		t.Fatal(err)
	}
	if err := s.FilesMkdir("fm", "d1", 0); err != nil {
		t.Fatal(err)
	}
	k := format.FileKey("fm", "d1/g.bin")
	if _, err := publishDraft(s, k, []byte("written through")); err != nil {
		t.Fatal(err)
	}
	_, st = afterPowerCut(t, disk, s, st, true)
	if !st.Has(k) {
		t.Fatalf("%s, written through, is gone after a power cut", k)
	}
}
