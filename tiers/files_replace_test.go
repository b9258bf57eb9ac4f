package tiers

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"

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
// one File over each other, durable (an fsync each), an open, a stat and
// Has of it never find it absent, and no durable publish fails. A replace
// removes the old version and commits the new one under the key's
// stripe lock: an open that looked between the two found neither (ENOENT
// through a mount, 2.7% of opens), and a durable publish whose version
// another writer replaced meanwhile found its key on no directory tier,
// failed, and removed the other writer's version.
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
	var opens, openMisses, statMisses, hasMisses atomic.Int64
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
			}
		}()
	}
	writers.Wait()
	done.Store(true)
	readers.Wait()
	if openMisses.Load() > 0 || statMisses.Load() > 0 || hasMisses.Load() > 0 {
		t.Errorf("of %d opens, stats and Has while it was replaced, %d opens, %d stats and %d Has found it absent",
			opens.Load(), openMisses.Load(), statMisses.Load(), hasMisses.Load())
	}
	if !s.Has(k) {
		t.Error("the File is gone after the writers")
	}
}
