package tiers

import (
	"context"
	"testing"
	"time"

	"github.com/ucmfs/ucmfs/format"
)

// TestReuseToken: a memory handle's token stays reusable while the file
// stays, and not after an eviction or a remove and publish again; a lower
// tier's token is not reusable once the block is back in memory (Open
// would read memory), and a shared tier's private copy has none.
func TestReuseToken(t *testing.T) {
	dir := t.TempDir()
	s := newTestStack(t, 8<<20, dir, StackConfig{})
	k, data := testBlock("m", 1, 64<<10)
	if _, err := s.Put(k, data, false); err != nil {
		t.Fatal(err)
	}
	h, err := s.Open(k)
	if err != nil {
		t.Fatal(err)
	}
	h.File.Close()
	hits := s.Stats().MemHits
	if !h.Token.Valid() || !s.Current(k, h.Token) || !s.Reuse(k, h.Token) {
		t.Fatalf("a fresh memory handle's token is not reusable: %+v", h.Token)
	}
	if got := s.Stats().MemHits; got != hits+1 {
		t.Fatalf("a reuse counted %d memory hits, want 1", got-hits)
	}
	if err := s.Flush(context.Background(), k); err != nil {
		t.Fatal(err)
	}
	if err := s.Evict(k); err != nil {
		t.Fatal(err)
	}
	if s.Current(k, h.Token) || s.Reuse(k, h.Token) {
		t.Fatal("the token of an evicted file is still reusable")
	}

	low, err := s.Open(k) // from the nvme tier; its promotion is queued
	if err != nil {
		t.Fatal(err)
	}
	low.File.Close()
	if low.TierID == Memory || !low.Token.Valid() {
		t.Fatalf("read after the eviction from tier %d, token %+v", low.TierID, low.Token)
	}
	waitPromoted(t, s, k)
	if s.Current(k, low.Token) || s.Reuse(k, low.Token) {
		t.Fatal("a lower tier's token is reusable while memory holds the block")
	}

	h2, err := s.Open(k)
	if err != nil {
		t.Fatal(err)
	}
	h2.File.Close()
	if err := s.Remove(k); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(k, data, false); err != nil {
		t.Fatal(err)
	}
	if s.Current(k, h2.Token) || s.Reuse(k, h2.Token) {
		t.Fatal("the token of a removed file is reusable after the block was published again")
	}
	if (Token{}).Valid() || s.Reuse(k, Token{}) {
		t.Fatal("the zero token is reusable")
	}
}

// TestPromotePace: with memory full, promotions that evict copy at most
// the pace's bucket (a second's worth of promotePaceMin here) and what it
// refills while the reads run, however many admitted blocks are read from
// the lower tier; the rest are dropped, and the reads are served from the
// lower tier all the same. The reads' own time is added to the bound, not
// assumed: they come from the disk (the tier was written with O_DIRECT),
// and a slow disk refills the bucket by a block per 1/16 s.
func TestPromotePace(t *testing.T) {
	const block = 1 << 20
	dir := t.TempDir()
	s := newTestStack(t, 8*block, dir, StackConfig{NoAdmission: true})
	var keys []format.Key
	for i := range 48 {
		k, data := testBlock("m", i, block-64)
		if _, err := s.Put(k, data, true); err != nil {
			t.Fatal(err)
		}
		if err := s.Flush(context.Background(), k); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	before := s.Stats()
	start := time.Now()
	for _, k := range keys {
		h, err := s.Open(k)
		if err != nil {
			t.Fatal(err)
		}
		h.File.Close()
	}
	refill := int64(time.Since(start).Seconds()*promotePaceMin) / block
	waitQuiet(t, s)
	got := s.Stats().Promotions - before.Promotions
	t.Logf("%d promotions (the bucket refilled %d blocks while the reads ran)", got, refill)
	if most := int64(promotePaceMin/block) + refill + 2; got > most || got == 0 {
		t.Fatalf("%d promotions after reading 48 blocks with memory full, want 1..%d", got, most)
	}
}

// waitQuiet waits until no promotion is queued or running.
func waitQuiet(t *testing.T, s *Stack) {
	t.Helper()
	for i := 0; s.promoting() > 0; i++ {
		if i > 2000 {
			t.Fatal("promotions still queued")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
