package tiers

import (
	"bytes"
	"errors"
	"testing"

	"github.com/ucmfs/ucmfs/format"
)

// TestStackTierView: Tiers describes memory then the directory tiers;
// Publish, Stat, Open and ReadFile say which tier they used.
func TestStackTierView(t *testing.T) {
	dir := t.TempDir()
	s := newTestStack(t, 8<<20, dir, StackConfig{})
	ts := s.Tiers()
	if len(ts) != 2 || ts[0].ID != Memory || ts[0].Name != "mem" || ts[0].Persistent ||
		ts[1].ID != 1 || ts[1].Name != "nvme" || !ts[1].Persistent || ts[1].Dir != dir || ts[1].Health != Up {
		t.Fatalf("tiers: %+v", ts)
	}
	k, data := testBlock("m", 1, 64<<10)
	info, err := s.Put(k, data, true)
	if err != nil || info.Tier != Memory {
		t.Fatalf("put: tier %d, %v", info.Tier, err)
	}
	if bi, err := s.Stat(k); err != nil || bi.Tier != Memory || len(bi.Holders) != 2 {
		t.Fatalf("stat: %+v, %v", bi, err)
	}
	h, err := s.Open(k)
	if err != nil || h.TierID != Memory {
		t.Fatalf("open: %+v, %v", h, err)
	}
	h.File.Close()
	if got := s.Tiers()[Memory].Usage.Files; got != 1 {
		t.Fatalf("memory holds %d files", got)
	}
	if err := s.Evict(k); err != nil {
		t.Fatal(err)
	}
	hdr, in, err := s.ReadFile(k, format.HeaderSize)
	if err != nil || in.Tier != 1 || !bytes.Equal(hdr, data[:format.HeaderSize]) {
		t.Fatalf("read file: tier %d, %v", in.Tier, err)
	}
	all, _, err := s.ReadFile(k, -1)
	if err != nil || !bytes.Equal(all, data) {
		t.Fatalf("read whole file: %d bytes, %v", len(all), err)
	}
	if bi, _ := s.Stat(k); bi.Tier != 1 {
		t.Fatalf("stat after evict: tier %d, want 1 (ReadFile must not promote)", bi.Tier)
	}
	if _, _, err := s.ReadFile(format.Key{Model: "m", ID: format.ID{9}}, -1); !errors.Is(err, ErrNotFound) {
		t.Fatalf("read file of an absent key: %v", err)
	}
	if m := s.Models(); len(m) != 1 || m[0] != "m" {
		t.Fatalf("models %v", m)
	}
}

// TestStackPublishDirect: a block memory cannot take goes to the
// directory tier, and Publish and Open say so.
func TestStackPublishDirect(t *testing.T) {
	s := newTestStack(t, 64<<10, t.TempDir(), StackConfig{})
	k, data := testBlock("m", 1, 128<<10)
	info, err := s.Put(k, data, false)
	if err != nil || info.Tier != 1 {
		t.Fatalf("put: tier %d, %v", info.Tier, err)
	}
	h, err := s.Open(k)
	if err != nil || h.TierID != 1 || h.Tier != "nvme" {
		t.Fatalf("open: %+v, %v", h, err)
	}
	h.File.Close()
}

// TestStackPins: SetPinned does not promote, Pinned reports it, and
// Evict drops only clean, unpinned copies.
func TestStackPins(t *testing.T) {
	s := newTestStack(t, 8<<20, t.TempDir(), StackConfig{RetryDelay: 1 << 40})
	k, data := testBlock("m", 1, 64<<10)
	if _, err := s.Put(k, data, false); err != nil {
		t.Fatal(err)
	}
	if m := s.Mapping(k); m != nil && !bytes.Equal(m, data) {
		t.Fatal("the mapping is not the file")
	}
	if err := s.SetPinned(k, true); err != nil || !s.Pinned(k) {
		t.Fatalf("pin: %v", err)
	}
	if err := s.Evict(k); err == nil {
		t.Fatal("evicted a pinned block")
	}
	if err := s.SetPinned(k, false); err != nil || s.Pinned(k) {
		t.Fatalf("unpin: %v", err)
	}
	if err := s.FlushAll(t.Context(), ""); err != nil {
		t.Fatal(err)
	}
	if err := s.Evict(k); err != nil {
		t.Fatal(err)
	}
	if err := s.Evict(k); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second evict: %v", err)
	}
	if err := s.SetPinned(k, true); !errors.Is(err, ErrNotFound) {
		t.Fatalf("SetPinned of a block not in memory: %v", err)
	}
	if err := s.Pin(k, true); err != nil || !s.Pinned(k) {
		t.Fatalf("Pin promotes, then pins: %v", err)
	}
}

// TestStackEvictOnlyCopy: a memory-only stack never evicts its only copy.
func TestStackEvictOnlyCopy(t *testing.T) {
	s := newTestStack(t, 8<<20, "", StackConfig{})
	k, data := testBlock("m", 1, 1000)
	if _, err := s.Put(k, data, false); err != nil {
		t.Fatal(err)
	}
	if err := s.Evict(k); err == nil || errors.Is(err, ErrNotFound) {
		t.Fatalf("evicted the only copy: %v", err)
	}
}

// TestNewTierError: New names the tier it could not build and closes
// the ones it built.
func TestNewTierError(t *testing.T) {
	dir := t.TempDir()
	_, err := New(StackConfig{Logger: testLogger()}, MemConfig{Capacity: 1 << 20},
		DirConfig{Kind: "nvme", Dir: dir}, DirConfig{Kind: "tape", Dir: t.TempDir()})
	var te *TierError
	if !errors.As(err, &te) || te.ID != 2 {
		t.Fatalf("New with a bad second tier: %v", err)
	}
	// The first directory tier was closed: its lock is free again.
	d, err := NewDirTier(DirConfig{Kind: "nvme", Dir: dir, Logger: testLogger()})
	if err != nil {
		t.Fatalf("the tier New built stayed locked: %v", err)
	}
	d.Close()
	if _, err := New(StackConfig{}, MemConfig{}); !errors.As(err, &te) || te.ID != Memory {
		t.Fatalf("New with no memory capacity: %v", err)
	}
}
