package store

import (
	"crypto/md5"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/internal/tiertest"
	"github.com/ucmfs/ucmfs/tiers"
)

// These tests drive the store without a kernel, over a real stack in
// temporary directories.

const testModel = "meta-llama--Llama-3.1-8B"

// newTestStore builds a store of a 64 MiB memory tier over an nvme tier.
func newTestStore(t testing.TB, opts Options) *Store {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	st := tiertest.NewStack(t, log, tiers.MemConfig{Capacity: 64 << 20}, tiers.DirConfig{Kind: "nvme"})
	opts.Logger = log
	s, err := New(st, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// storeOver returns a func that opens a store (opts, with a Logger)
// over a 16 MiB memory tier and an nvme tier in dir: each call a new one
// over the same directory, as a restart does. The caller closes both.
func storeOver(t testing.TB, dir string, opts Options) func() (*Store, *tiers.Stack) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	opts.Logger = log
	return func() (*Store, *tiers.Stack) {
		t.Helper()
		st, err := tiers.New(tiers.StackConfig{Logger: log}, tiers.MemConfig{Capacity: 16 << 20, Logger: log},
			tiers.DirConfig{Kind: "nvme", Dir: dir, Logger: log})
		if err != nil {
			t.Fatal(err)
		}
		s, err := New(st, opts)
		if err != nil {
			t.Fatal(err)
		}
		return s, st
	}
}

// testBlock is block n of testModel with payload bytes.
func testBlock(n, payload int) (format.Key, []byte) {
	id := format.ID(md5.Sum(fmt.Appendf(nil, "%s/%d", testModel, n)))
	h := format.BlockHeader{ID: id, NumLayers: 2, BlockSize: 4, Dtype: format.BFloat16}
	return format.Key{Model: testModel, ID: id}, format.NewBlock(h, make([]byte, payload))
}

// publish writes data as key through a pending write and Publish.
func publish(t *testing.T, s *Store, key format.Key, data []byte) (tiers.Info, error) {
	t.Helper()
	pw, err := s.stack.Create(key)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pw.File().WriteAt(data, 0); err != nil {
		t.Fatal(err)
	}
	return s.Writes().Publish(pw, int64(len(data)), false)
}

// TestHitsPrune: the hit table drops the counts of keys no tier holds.
func TestHitsPrune(t *testing.T) {
	s := newTestStore(t, Options{})
	k1, d1 := testBlock(1, 64)
	if _, err := s.stack.Put(k1, d1, false); err != nil {
		t.Fatal(err)
	}
	k2, _ := testBlock(2, 64)
	s.Hit(k1)
	s.Hit(k2)
	s.pruneHits()
	if s.Hits(k1) != 1 || s.Hits(k2) != 0 {
		t.Fatalf("hits after prune: %d %d", s.Hits(k1), s.Hits(k2))
	}
}

// TestPublishRules: the size limit, the quota, and the model registry,
// in the order Publish applies them; a refused write leaves nothing.
func TestPublishRules(t *testing.T) {
	s := newTestStore(t, Options{MaxFileSize: 4096})
	big, bigData := testBlock(1, 8192)
	if _, err := publish(t, s, big, bigData); !errors.Is(err, ErrTooBig) {
		t.Fatalf("past the size limit: %v, want ErrTooBig", err)
	}
	k, d := testBlock(2, 1024)
	s.Models().SetQuota(testModel, 512, 0)
	if _, err := publish(t, s, k, d); !errors.Is(err, ErrQuota) {
		t.Fatalf("past the quota: %v, want ErrQuota", err)
	}
	if s.stack.Has(big) || s.stack.Has(k) || s.Models().Exists(testModel) {
		t.Fatal("a refused write left a block or a model")
	}
	s.Models().SetQuota(testModel, 0, 0)
	info, err := publish(t, s, k, d)
	if err != nil || info.Size != int64(len(d)) {
		t.Fatalf("publish: %+v, %v", info, err)
	}
	if !s.Models().Exists(testModel) || s.Models().Usage(testModel).Blocks != 1 {
		t.Fatalf("after publish: exists %v, usage %+v", s.Models().Exists(testModel), s.Models().Usage(testModel))
	}
	if st := s.Snapshot(); st.Tiers[0].BytesIn != int64(len(d)) {
		t.Errorf("bytes in of the memory tier: %d, want %d", st.Tiers[0].BytesIn, len(d))
	}
	if err := s.Models().Remove(testModel, 0); err == nil {
		t.Error("removed a model that holds a block")
	}
}
