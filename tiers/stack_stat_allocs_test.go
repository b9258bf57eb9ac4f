package tiers

import (
	"context"
	"slices"
	"testing"
	"time"
)

// TestStatAllocs: Stat of a published block, in memory or on the disk
// tier or both, allocates nothing (a GETATTR and a lookup ask it), and
// its Holders still name the tiers holding it, fastest first.
func TestStatAllocs(t *testing.T) {
	// Written back only by the flush below: at once (the tests'
	// default), the block could be on nvme too at the first check.
	s := newTestStack(t, 8<<20, t.TempDir(), StackConfig{DirtyExpire: time.Hour})
	k, data := testBlock("m", 1, 4<<10)
	if _, err := s.Put(k, data, false); err != nil {
		t.Fatal(err)
	}
	check := func(want ...string) {
		t.Helper()
		var bi BlockInfo
		var err error
		if n := testing.AllocsPerRun(100, func() { bi, err = s.Stat(k) }); n > 0 {
			t.Errorf("Stat of a block on %v allocates %.1f times, want 0", want, n)
		}
		if err != nil || !slices.Equal(bi.Holders, want) {
			t.Errorf("Stat: holders %v, %v; want %v", bi.Holders, err, want)
		}
	}
	check("mem")
	if err := s.FlushAll(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	check("mem", "nvme")
	if err := s.Evict(k); err != nil {
		t.Fatal(err)
	}
	check("nvme")
}
