package tiers

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestStackChurn pushes 10k distinct 64 KiB blocks (640 MiB) through a
// 64 MiB memory tier over a directory tier: memory use never passes its
// capacity (sampled throughout and checked after every write), no dirty
// block is dropped, and every block reads back intact at the end.
func TestStackChurn(t *testing.T) {
	n := 10_000
	if testing.Short() {
		n = 2_000
	}
	const memCap = 64 << 20
	const payload = 64<<10 - 64
	s := newTestStack(t, memCap, t.TempDir(), StackConfig{WriteBackWorkers: 2})

	var maxUsed atomic.Int64
	sample := func() {
		u := s.mem.Usage().Used
		for {
			m := maxUsed.Load()
			if u <= m || maxUsed.CompareAndSwap(m, u) {
				return
			}
		}
	}
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() { // sampler, independent of the writers
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			default:
				sample()
				time.Sleep(100 * time.Microsecond)
			}
		}
	}()
	const writers = 4
	var werr atomic.Value
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < n; i += writers {
				k, data := testBlock("churn", i, payload)
				if _, err := s.Put(k, data, false); err != nil {
					werr.Store(err)
					return
				}
				sample()
			}
		}(w)
	}
	wg.Wait()
	close(stop)
	<-sampled
	if err := werr.Load(); err != nil {
		t.Fatalf("write failed: %v", err)
	}
	if m := maxUsed.Load(); m > memCap {
		t.Fatalf("memory tier held %d bytes, capacity %d", m, memCap)
	}
	st := s.Stats()
	if st.Evictions == 0 {
		t.Fatalf("10x capacity churned without evictions: %+v", st)
	}
	if err := s.FlushAll(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		k, data := testBlock("churn", i, payload)
		mustEqual(t, k.String(), readAll(t, s, k), data)
	}
	t.Logf("max memory used %d of %d; %+v", maxUsed.Load(), int64(memCap), s.Stats())
}
