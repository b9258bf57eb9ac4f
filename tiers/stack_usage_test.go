package tiers

import (
	"context"
	"testing"
	"time"

	"github.com/ucmfs/ucmfs/format"
)

// walkUsage counts model's distinct files by walking the stack, as the
// counters must.
func walkUsage(s *Stack, model string) ModelCount {
	var keys []format.Key
	s.List(model, func(k format.Key) bool { keys = append(keys, k); return true })
	var c ModelCount
	for _, k := range keys {
		bi, err := s.Stat(k)
		if err != nil {
			continue
		}
		if k.Kind == format.Block {
			c.Blocks++
		}
		c.Files++
		c.Bytes += bi.Size
	}
	return c
}

// TestStackModelUsageCounters checks the per-model counters against a walk
// through the life of blocks: dirty in memory, written back, evicted,
// promoted, removed; with a directory tier and memory-only.
func TestStackModelUsageCounters(t *testing.T) {
	for _, dir := range []string{t.TempDir(), ""} {
		// No write-back until memory needs room: a write-back commits a
		// block to the directory tier before it marks it clean, and the
		// counters, read without the key's lock, count it twice between
		// the two (the "dirty" check met that under load).
		s := newTestStack(t, 1<<20, dir, StackConfig{DirtyExpire: time.Hour, DirtyBackground: 1 << 30})
		check := func(when string) {
			t.Helper()
			if got, want := s.ModelUsage("m"), walkUsage(s, "m"); got != want {
				t.Fatalf("dir %q, %s: counters %+v, walk %+v", dir, when, got, want)
			}
		}
		check("empty")
		var keys []format.Key
		for i := 0; i < 12; i++ { // 12 × 200 kB: more than memory holds
			k, data := testBlock("m", i, 200_000)
			if _, err := s.Put(k, data, false); err != nil {
				t.Fatal(err)
			}
			keys = append(keys, k)
			if dir != "" && i == 2 {
				check("dirty")
			}
		}
		if err := s.FlushAll(context.Background(), ""); err != nil {
			t.Fatal(err)
		}
		check("written back")
		if dir != "" {
			readAll(t, s, keys[0])
			check("after a read")
		}
		if err := s.Remove(keys[len(keys)-1]); err != nil {
			t.Fatal(err)
		}
		check("after a remove")
		if got := s.ModelUsage("none"); got != (ModelCount{}) {
			t.Fatalf("unknown model: %+v", got)
		}
	}
}
