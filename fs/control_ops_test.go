package fs

import (
	"context"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/internal/faultfs"
	"github.com/ucmfs/ucmfs/store"
	"github.com/ucmfs/ucmfs/tiers"
)

// waitPrefetched waits until no promotion is queued or running (bounded:
// a stuck pool fails the test instead of hanging it).
func waitPrefetched(t *testing.T, m *testMount) store.Stats {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		st := readStats(t, m)
		if st.PrefetchPending == 0 {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("prefetch still pending: %+v", st.ControlStats)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestPrefetch: ids on the directory tier only are queued and promoted
// into memory; absent ids are counted as missing.
func TestPrefetch(t *testing.T) {
	m := newMount(t, Options{})
	keys := putKeys(t, m.st, testModel, 10)
	if err := m.st.FlushAll(t.Context(), ""); err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if err := m.st.Evict(k); err != nil {
			t.Fatal(err)
		}
	}
	abs := absentKeys(testModel, 2)
	c := openCtl(t, m, "prefetch")
	if a := c.ask(testModel + " " + idList(keys) + " " + idList(abs)); a != "ok queued=10 missing=2" {
		t.Fatalf("prefetch: %q", a)
	}
	st := waitPrefetched(t, m)
	for _, k := range keys {
		if bi, err := m.st.Stat(k); err != nil || bi.Tier != tiers.Memory {
			t.Errorf("%s not in memory after prefetch: %v", k, err)
		}
	}
	if st.Prefetches != 1 || st.PrefetchQueued != 10 || st.PrefetchMissing != 2 || st.PrefetchPromoted != 10 ||
		st.PrefetchFailed != 0 || st.Promotions < 10 {
		t.Errorf("stats after prefetch: %+v, promotions %d", st.ControlStats, st.Promotions)
	}
	// Blocks already in memory are queued too, and promote at once.
	if a := c.ask(testModel + " " + idList(keys[:3])); a != "ok queued=3 missing=0" {
		t.Fatalf("prefetch of resident blocks: %q", a)
	}
	if st := waitPrefetched(t, m); st.PrefetchPromoted != 13 {
		t.Errorf("promoted %d, want 13", st.PrefetchPromoted)
	}
}

// TestFlush: flush answers once every dirty block (of the model, or of
// all) is on the directory tier.
func TestFlush(t *testing.T) {
	m := newMount(t, Options{})
	other := "org--Other"
	if err := os.Mkdir(m.path(testModel), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(m.path(other), 0o755); err != nil {
		t.Fatal(err)
	}
	var keys []format.Key
	for i := 0; i < 8; i++ {
		model := testModel
		if i%2 == 1 {
			model = other
		}
		k, d := testBlock(model, i, 4096)
		if err := writeFile(m.keyPath(k), d); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	c := openCtl(t, m, "flush")
	if a := c.ask("model " + testModel); a != "ok flushed" {
		t.Fatalf("flush model: %q", a)
	}
	for _, k := range keys {
		if k.Model != testModel {
			continue
		}
		if isDirty(m.st, k) {
			t.Errorf("%s still dirty after its model's flush", k)
		}
		if _, err := onDisk(m.st, k); err != nil {
			t.Errorf("%s not on the directory tier: %v", k, err)
		}
	}
	if a := c.ask("all"); a != "ok flushed" {
		t.Fatalf("flush all: %q", a)
	}
	for _, k := range keys {
		if _, err := onDisk(m.st, k); err != nil || isDirty(m.st, k) {
			t.Errorf("%s after flush all: dirty %v, %v", k, isDirty(m.st, k), err)
		}
	}
	if st := readStats(t, m); st.Flushes != 2 || st.FlushErrors != 0 {
		t.Errorf("stats: flushes %d errors %d", st.Flushes, st.FlushErrors)
	}
	if n := testutil.CollectAndCount(m.srv.state.store.Latency.Flush.(prometheus.Collector)); n != 1 {
		t.Errorf("flush histogram: %d series", n)
	}
}

// TestFlushMemoryOnly: a mount without a directory tier has nothing to
// make durable.
func TestFlushMemoryOnly(t *testing.T) {
	requireFUSE(t)
	st, err := tiers.New(tiers.StackConfig{Logger: testLogger()}, tiers.MemConfig{Capacity: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close(context.Background()) })
	m := newMountWith(t, st, Options{})
	putKeys(t, st, testModel, 2)
	if a := openCtl(t, m, "flush").ask("all"); a != "ok flushed" {
		t.Fatalf("flush all: %q", a)
	}
}

// TestFlushEIO: a directory tier that fails writes makes flush answer
// err EIO; once it heals, flush succeeds.
func TestFlushEIO(t *testing.T) {
	requireFUSE(t)
	ffs := faultfs.Mount(t, t.TempDir())
	st, err := tiers.New(tiers.StackConfig{Logger: testLogger(), RetryDelay: 20 * time.Millisecond}, tiers.MemConfig{Capacity: 8 << 20}, tiers.DirConfig{Kind: "nvme", Dir: ffs.Dir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ffs.Clear()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		st.Close(ctx)
	})
	m := newMountWith(t, st, Options{})
	ffs.Inject(faultfs.Fault{Op: faultfs.OpWrite, Errno: syscall.EIO})
	keys := putKeys(t, st, testModel, 2)
	c := openCtl(t, m, "flush")
	if a := c.ask("all"); errnoOfAnswer(a) != "EIO" {
		t.Fatalf("flush onto a failing tier: %q, want err EIO", a)
	}
	if a := c.ask("model " + testModel); errnoOfAnswer(a) != "EIO" || !strings.Contains(a, "flush") {
		t.Fatalf("flush model onto a failing tier: %q, want err EIO", a)
	}
	ffs.Clear()
	// The failing writes took the tier down; its probe (every second)
	// brings it back once it takes writes again.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		a := c.ask("all")
		if a == "ok flushed" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("flush after the fault cleared: %q", a)
		}
	}
	for _, k := range keys {
		if isDirty(st, k) {
			t.Errorf("%s still dirty", k)
		}
	}
	if s := readStats(t, m); s.Flushes < 3 || s.FlushErrors != s.Flushes-1 || s.ControlErrors != s.FlushErrors {
		t.Errorf("stats: flushes %d errors %d control errors %d", s.Flushes, s.FlushErrors, s.ControlErrors)
	}
}
