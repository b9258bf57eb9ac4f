package tiers

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ucmfs/ucmfs/format"
)

// replaceFile publishes data as a new version of the File k, as an
// engine's rename over it or a rewrite does (SetReplace); durable as an
// fsync asks.
func replaceFile(s *Stack, k format.Key, data []byte, durable bool) error {
	p, err := s.CreateStaging(k)
	if err != nil {
		return err
	}
	if _, err := p.File().Write(data); err != nil {
		s.Abort(p)
		return err
	}
	p.SetReplace()
	_, err = s.Publish(p, durable)
	return err
}

// TestFilesReplacedNeverMissing: while two writers publish versions of
// one File over each other, durable (an fsync each), an open, a stat,
// Has and a listing of its directory never find it absent, and no
// durable publish fails. A replace
// removes the old version and commits the new one under the key's
// stripe lock: an open that looked between the two found neither (ENOENT
// through a mount, 2.7% of opens), and a durable publish whose version
// another writer replaced meanwhile found its key on no directory tier,
// failed, and removed the other writer's version. A listing read the
// indexes between the two as well (stack_replacing.go).
func TestFilesReplacedNeverMissing(t *testing.T) {
	s := newTestStack(t, 64<<20, t.TempDir(), StackConfig{})
	k := format.FileKey("engine", "pages/p.bin")
	if err := replaceFile(s, k, []byte("v0"), true); err != nil {
		t.Fatal(err)
	}
	const rounds = 400
	var writers sync.WaitGroup
	var done atomic.Bool
	for w := range 2 {
		writers.Add(1)
		go func() {
			defer writers.Done()
			data := []byte{byte('a' + w)}
			for i := 0; i < rounds; i++ {
				if err := replaceFile(s, k, data, true); err != nil {
					t.Errorf("writer %d, version %d: %v", w, i, err)
					return
				}
			}
		}()
	}
	var opens, openMisses, statMisses, hasMisses, listMisses atomic.Int64
	var readers sync.WaitGroup
	for range 2 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for !done.Load() {
				opens.Add(1)
				h, err := s.Open(k)
				switch {
				case errors.Is(err, ErrNotFound):
					openMisses.Add(1)
				case err != nil:
					t.Errorf("open: %v", err)
					return
				default:
					h.File.Close()
				}
				if _, err := s.Stat(k); errors.Is(err, ErrNotFound) {
					statMisses.Add(1)
				}
				if !s.Has(k) {
					hasMisses.Add(1)
				}
				if keys, _ := s.AppendShardKeys(k.Model, k.ID[0], nil); !slices.Contains(keys, k) {
					listMisses.Add(1)
				}
			}
		}()
	}
	writers.Wait()
	done.Store(true)
	readers.Wait()
	if openMisses.Load() > 0 || statMisses.Load() > 0 || hasMisses.Load() > 0 || listMisses.Load() > 0 {
		t.Errorf("of %d opens, stats, Has and listings while it was replaced, %d opens, %d stats, %d Has and %d listings found it absent",
			opens.Load(), openMisses.Load(), statMisses.Load(), hasMisses.Load(), listMisses.Load())
	}
	if !s.Has(k) {
		t.Error("the File is gone after the writers")
	}
}

// TestFilesReplacedKeepsOldOnDisk: a new version of a File written back
// to no tier yet leaves the old version's file on the directory tier, in
// no index (a kill -9 now leaves the old version, where it left neither);
// its write-back renames over that file; an unlink before the write-back
// removes it; and a superseded file counts in no index.
func TestFilesReplacedKeepsOldOnDisk(t *testing.T) {
	dir := t.TempDir()
	s := newTestStack(t, 64<<20, dir, StackConfig{DirtyExpire: time.Hour, DirtyBackground: 1 << 30})
	d := s.dirs[0]
	k := format.FileKey("engine", "pages/p.bin")
	onDisk := func() string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, k.Path()))
		if errors.Is(err, os.ErrNotExist) {
			return "(none)"
		}
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if err := replaceFile(s, k, []byte("version 1"), true); err != nil {
		t.Fatal(err)
	}
	if err := replaceFile(s, k, []byte("version 2, longer"), false); err != nil {
		t.Fatal(err)
	}
	mustEqual(t, "read after the replace", readAll(t, s, k), []byte("version 2, longer"))
	if got := onDisk(); got != "version 1" {
		t.Fatalf("the tier's file before the new version's write-back: %q, want the old version", got)
	}
	if d.Index().Has(k) {
		t.Error("the superseded file is still in the tier's index")
	}
	if r, u := d.Index().Room(), d.Usage(); r != u.Capacity || u.Files != 0 {
		t.Errorf("tier room %d of %d, %d files, with only a superseded file: it must not count", r, u.Capacity, u.Files)
	}
	if err := s.Flush(context.Background(), k); err != nil {
		t.Fatal(err)
	}
	if got := onDisk(); got != "version 2, longer" {
		t.Fatalf("the tier's file after the write-back: %q", got)
	}
	if r, u := d.Index().Room(), d.Usage(); r != u.Capacity-u.Charged || u.Files != 1 {
		t.Errorf("tier room %d after the write-back, capacity %d, charged %d, %d files", r, u.Capacity, u.Charged, u.Files)
	}
	if err := replaceFile(s, k, []byte("version 3"), false); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(k); err != nil {
		t.Fatal(err)
	}
	if got := onDisk(); got != "(none)" {
		t.Fatalf("the tier's file after an unlink of the new version: %q", got)
	}
	if r, u := d.Index().Room(), d.Usage(); r != u.Capacity || u.Files != 0 {
		t.Errorf("tier room %d of %d, %d files, after the unlink", r, u.Capacity, u.Files)
	}
}

// TestDropSparesNewerVersion replays, step by step, the race that made
// files written whole vanish: the last tier's eviction chooses a File's
// version (Oldest), a new version of the name is published meanwhile
// (in memory, dirty, not yet written back), then the eviction drops what
// it chose. Only the chosen version goes: the new one is still read, and
// written back.
func TestDropSparesNewerVersion(t *testing.T) {
	s := newTestStack(t, 64<<20, t.TempDir(), StackConfig{})
	k := format.FileKey("engine", "f00000.bin")
	old, newer := make([]byte, 1<<20), make([]byte, 512<<10)
	for i := range old {
		old[i] = 1
	}
	for i := range newer {
		newer[i] = 2
	}
	if err := replaceFile(s, k, old, true); err != nil { // on the nvme tier
		t.Fatal(err)
	}
	d := s.dirs[0]
	victims := d.Oldest(64)
	if len(victims) != 1 || victims[0].Key != k {
		t.Fatalf("the eviction's choice: %v", victims)
	}
	if err := replaceFile(s, k, newer, false); err != nil {
		t.Fatal(err)
	}
	err := s.evictFrom(len(s.dirs)-1, victims[0], false)
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("the drop of a version replaced since it was chosen: %v, want ErrNotFound", err)
	}
	got, _, err := s.ReadFile(k, int64(len(newer)))
	if err != nil || len(got) != len(newer) || got[0] != 2 {
		t.Fatalf("the new version after the drop: %d bytes, %v", len(got), err)
	}
	if err := s.Flush(context.Background(), k); err != nil {
		t.Fatalf("write-back of the new version: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(d.Dir(), k.Path())); err != nil || len(b) != len(newer) || b[0] != 2 {
		t.Fatalf("the new version on the nvme tier: %d bytes, %v", len(b), err)
	}
	if n := s.Stats().Drops; n != 0 {
		t.Errorf("drops counted %d, want 0", n)
	}
}
