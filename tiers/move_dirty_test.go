package tiers

import (
	"context"
	"hash/maphash"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/tiers/rootfs/crashfs"
)

// dirtyBlock is the payload size of the blocks of the dirty tests.
const dirtyBlock = 100 << 10

// putDirty publishes blocks n0..n1-1 of model, write-back in the background.
func putDirty(t *testing.T, s *Stack, model string, n0, n1 int) []format.Key {
	t.Helper()
	var keys []format.Key
	for n := n0; n < n1; n++ {
		k, data := testBlock(model, n, dirtyBlock)
		if _, err := s.Put(k, data, false); err != nil {
			t.Fatalf("put %d: %v", n, err)
		}
		keys = append(keys, k)
	}
	return keys
}

// distinctStripes reseeds the new stack s (no key used yet) until blocks
// 0..n-1 of model take n different stripe locks: a write-back stalled
// with one block's lock held must not block the writer of another by
// chance (1 run in ~50 with two stalled write-backs), when what a test
// watches is the dirty limit's throttle.
func distinctStripes(t *testing.T, s *Stack, model string, n int) {
	t.Helper()
	for {
		seen := map[*sync.Mutex]bool{}
		for i := range n {
			k, _ := testBlock(model, i, 0)
			seen[s.keyLock(k)] = true
		}
		if len(seen) == n {
			return
		}
		s.seed = maphash.MakeSeed()
	}
}

// onDisk reports whether the stack's first directory tier holds k.
func onDisk(s *Stack, k format.Key) bool {
	_, err := s.dirs[0].Stat(k)
	return err == nil
}

// waitFor polls cond every 5 ms for up to 20 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after 20s", what)
		}
	}
}

func TestDirtyDeferredUntilExpiry(t *testing.T) {
	const expire = 1500 * time.Millisecond
	s := newTestStack(t, 16<<20, t.TempDir(), StackConfig{DirtyExpire: expire, DirtyBackground: 4 << 20, DirtyLimit: 8 << 20})
	start := time.Now()
	k := putDirty(t, s, "d", 0, 1)[0]
	if bi, _ := s.Stat(k); !bi.Dirty || onDisk(s, k) {
		t.Fatalf("a block under the background threshold was written back at once: %+v", bi)
	}
	if du := s.DirtyUsage(); du.Files != 1 || du.Bytes <= dirtyBlock {
		t.Fatalf("dirty usage %+v, want one file of the block's size", du)
	}
	if st := s.Stats(); st.DirtyFiles != 1 || st.DirtyBytes != s.DirtyUsage().Bytes {
		t.Fatalf("stats dirty %d files, %d bytes", st.DirtyFiles, st.DirtyBytes)
	}
	waitFor(t, "written back after the expiry", func() bool { return onDisk(s, k) })
	if took := time.Since(start); took < expire {
		t.Fatalf("written back after %v, before the expiry %v", took, expire)
	}
	waitFor(t, "clean", func() bool { bi, _ := s.Stat(k); return !bi.Dirty })
	if du := s.DirtyUsage(); du.Files != 0 || du.Bytes != 0 {
		t.Fatalf("dirty usage %+v after write-back", du)
	}
}

func TestDirtyBackgroundOldestFirst(t *testing.T) {
	const bg = 512 << 10
	s := newTestStack(t, 16<<20, t.TempDir(), StackConfig{DirtyExpire: time.Hour, DirtyBackground: bg, DirtyLimit: 8 << 20})
	keys := putDirty(t, s, "d", 0, 10) // about 1 MiB
	waitFor(t, "dirty bytes back under the background threshold", func() bool { return s.DirtyUsage().Bytes <= bg })
	time.Sleep(100 * time.Millisecond) // a write-back past the threshold would show now
	if !onDisk(s, keys[0]) {
		t.Fatal("the oldest block is still dirty over the threshold")
	}
	if onDisk(s, keys[9]) || s.DirtyUsage().Bytes == 0 {
		t.Fatalf("write-back went on under the threshold: %+v", s.DirtyUsage())
	}
	for i := 1; i < len(keys); i++ {
		if onDisk(s, keys[i]) && !onDisk(s, keys[i-1]) {
			t.Fatalf("block %d written back before the older block %d", i, i-1)
		}
	}
}

func TestDirtyLimitThrottles(t *testing.T) {
	g := crashfs.NewGate()
	s := buildStack(t, StackConfig{DirtyExpire: time.Hour, DirtyBackground: 256 << 10, DirtyLimit: 512 << 10, RoomWait: time.Minute},
		MemConfig{Capacity: 16 << 20}, DirConfig{Kind: "nvme", Dir: t.TempDir(), OpenFS: crashfs.OpenWrapped(g.Before)})
	distinctStripes(t, s, "d", 10)
	release := g.Open
	t.Cleanup(release) // before the stack's Close, which waits for the stalled write-back
	g.Hold("utimes")   // the first operation of a commit on the tier (its mtime)
	done := make(chan []format.Key)
	go func() { done <- putDirty(t, s, "d", 0, 10) }()
	waitFor(t, "a throttled writer", func() bool { return s.Stats().Throttles > 0 })
	select {
	case <-done:
		t.Fatal("the writer went past the dirty limit while write-back was stalled")
	case <-time.After(200 * time.Millisecond):
	}
	if du := s.DirtyUsage(); du.Bytes > (512<<10)+2*dirtyBlock {
		t.Fatalf("dirty bytes %d went far past the limit", du.Bytes)
	}
	release()
	var keys []format.Key
	select {
	case keys = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the writer was not released once write-back ran")
	}
	for _, k := range keys {
		if !s.Has(k) {
			t.Fatalf("%s lost", k)
		}
	}
	if du := s.DirtyUsage(); du.Bytes > 512<<10 {
		t.Fatalf("dirty bytes %d over the limit once the writer is done", du.Bytes)
	}
}

func TestDirtyFlushIgnoresExpiry(t *testing.T) {
	s := newTestStack(t, 16<<20, t.TempDir(), StackConfig{DirtyExpire: time.Hour})
	keys := putDirty(t, s, "d", 0, 3)
	if err := s.Flush(context.Background(), keys[0]); err != nil {
		t.Fatal(err)
	}
	if !onDisk(s, keys[0]) || onDisk(s, keys[1]) {
		t.Fatal("Flush of one block: not on disk, or another went too")
	}
	if err := s.FlushAll(context.Background(), "d"); err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if bi, _ := s.Stat(k); bi.Dirty || !onDisk(s, k) {
			t.Fatalf("%s still dirty after FlushAll: %+v", k, bi)
		}
	}
}

func TestDirtyCloseWritesBack(t *testing.T) {
	dir := t.TempDir()
	s, err := New(StackConfig{DirtyExpire: time.Hour, Logger: testLogger()}, MemConfig{Capacity: 16 << 20}, DirConfig{Kind: "nvme", Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	keys := putDirty(t, s, "d", 0, 5)
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	s2 := newTestStack(t, 16<<20, dir, StackConfig{})
	for _, k := range keys {
		if !onDisk(s2, k) {
			t.Fatalf("%s dirty at Close was not written back", k)
		}
	}
}

func TestDirtyMemoryPressure(t *testing.T) {
	// Thresholds at the whole memory tier: only the writers' need of room
	// makes write-back run before the hour is up.
	s := newTestStack(t, 1<<20, t.TempDir(), StackConfig{DirtyExpire: time.Hour, DirtyBackground: 1 << 20, DirtyLimit: 1 << 20})
	keys := putDirty(t, s, "d", 0, 30) // 3 MiB through 1 MiB of memory
	if st := s.Stats(); st.DirectWrites != 0 || st.Evictions == 0 {
		t.Fatalf("memory pressure did not write back and evict: %+v", st)
	}
	for i, k := range keys {
		_, data := testBlock("d", i, dirtyBlock)
		mustEqual(t, "block under pressure", readAll(t, s, k), data)
	}
}

func TestDirtySharedTierAtOnce(t *testing.T) {
	s := buildStack(t, StackConfig{DirtyExpire: time.Hour}, MemConfig{Capacity: 16 << 20}, DirConfig{Kind: "nfs", Dir: t.TempDir()})
	k := putDirty(t, s, "d", 0, 1)[0]
	waitFor(t, "written back to the shared tier", func() bool { return onDisk(s, k) })
}

func TestDirtyThrottleGivesUpWhenWriteBackFails(t *testing.T) {
	// A tier whose creates all fail (EIO): every write-back fails, and the
	// writer over the limit must not wait for it (RoomWait is an hour).
	s, f, _ := faultStackOn(t, StackConfig{DirtyExpire: time.Hour, DirtyBackground: 100 << 10, DirtyLimit: 100 << 10,
		RoomWait: time.Hour, RetryDelay: time.Hour}, MemConfig{Capacity: 16 << 20},
		DirConfig{Kind: "nvme", OpTimeout: 500 * time.Millisecond})
	f.Set(crashfs.Fault{Match: creates, Errno: syscall.EIO})
	putDirty(t, s, "d", 0, 3)
	if st := s.Stats(); st.WriteBackErrors == 0 || st.Throttles == 0 {
		t.Fatalf("want failed write-backs and a throttled writer: %+v", st)
	}
}
