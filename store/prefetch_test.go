package store

import (
	"testing"
)

// TestPrefetchSettledCounts: every promotion Stats no longer counts as
// pending is counted as promoted or failed, so a reader that waits for
// prefetch_pending 0 reads the final counts. The pool once lowered
// pending before it counted the promotion, and Snapshot read the counts
// before pending: a reader saw nothing pending and a promotion missing.
func TestPrefetchSettledCounts(t *testing.T) {
	s := newTestStore(t, Options{})
	k, d := testBlock(1, 64)
	if _, err := s.stack.Put(k, d, false); err != nil {
		t.Fatal(err)
	}
	const n = 20000
	for range n {
		if err := s.EnqueuePrefetch(t.Context(), k); err != nil {
			t.Fatal(err)
		}
	}
	for {
		st := s.Snapshot()
		if done := st.PrefetchPromoted + st.PrefetchFailed; done+st.PrefetchPending < n {
			t.Fatalf("%d of %d promotions neither pending nor counted (%d pending, %d promoted, %d failed)",
				n-done-st.PrefetchPending, n, st.PrefetchPending, st.PrefetchPromoted, st.PrefetchFailed)
		}
		if st.PrefetchPending == 0 {
			return
		}
	}
}
