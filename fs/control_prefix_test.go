package fs

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/tiers"
)

// referenceLookup computes what lookup must answer for ids, from
// tiers.Stack.Has: the exists bitmap and the prefix length.
func referenceLookup(st *tiers.Stack, ids []format.Key) (present int, bitmap string, prefix int) {
	var b strings.Builder
	prefix = -1
	for i, k := range ids {
		if st.Has(k) {
			present++
			b.WriteByte('1')
		} else {
			b.WriteByte('0')
			if prefix < 0 {
				prefix = i
			}
		}
	}
	if prefix < 0 {
		prefix = len(ids)
	}
	return present, b.String(), prefix
}

// TestLookupMatchesReference: on random presence patterns (blocks in
// memory, on the directory tier only, absent; lists of random length in
// random order, often with long present runs), exists and prefix answer
// what the reference computes from Stack.Has, and Models.HasBlock agrees with
// Has on every key.
func TestLookupMatchesReference(t *testing.T) {
	m := newMount(t, Options{})
	stored := putKeys(t, m.st, testModel, 300)
	if err := m.st.FlushAll(t.Context(), ""); err != nil {
		t.Fatal(err)
	}
	for _, k := range stored[200:] { // on the directory tier only
		if err := m.st.Evict(k); err != nil {
			t.Fatal(err)
		}
	}
	pool := append(stored, absentKeys(testModel, 100)...)
	for _, k := range pool {
		if m.st.HasBlock(k.Model, k.ID) != m.st.Has(k) {
			t.Fatalf("HasBlock(%s) disagrees with Has", k)
		}
	}
	r := rand.New(rand.NewPCG(7, 7))
	c := openCtl(t, m, "lookup")
	for round := 0; round < 200; round++ {
		n := 1 + r.IntN(500)
		ids := make([]format.Key, n)
		run := r.IntN(n + 1) // a present run first, as a real prefix
		for i := range ids {
			if i < run {
				ids[i] = stored[r.IntN(len(stored))]
			} else {
				ids[i] = pool[r.IntN(len(pool))]
			}
		}
		present, bitmap, prefix := referenceLookup(m.st, ids)
		list := idList(ids)
		if a, want := c.ask("exists "+testModel+" "+list), fmt.Sprintf("ok %d %s", present, bitmap); a != want {
			t.Fatalf("round %d exists: %q, want %q", round, clip([]byte(a)), clip([]byte(want)))
		}
		if a, want := c.ask("prefix "+testModel+" "+list), fmt.Sprintf("ok %d", prefix); a != want {
			t.Fatalf("round %d prefix: %q, want %q", round, a, want)
		}
	}
}

// TestControlConcurrent: sessions on every control file at once, from
// several goroutines, each get their own answers, right.
func TestControlConcurrent(t *testing.T) {
	m := newMount(t, Options{})
	keys := putKeys(t, m.st, testModel, 64)
	abs := absentKeys(testModel, 64)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := 0; g < 6; g++ {
		c := openCtl(t, m, "lookup")
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				n := (g*50 + i) % len(keys)
				ids := append(append([]format.Key{}, keys[:n]...), abs[n])
				if a, err := c.tryAsk("prefix " + testModel + " " + idList(ids)); err != nil || a != fmt.Sprintf("ok %d", n) {
					errs <- fmt.Errorf("goroutine %d: prefix %q, %v; want ok %d", g, a, err, n)
					return
				}
			}
		}()
	}
	pf, fl := openCtl(t, m, "prefetch"), openCtl(t, m, "flush")
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := 0; i < 20; i++ {
			if a, err := pf.tryAsk(testModel + " " + idList(keys[:8]) + " " + abs[0].ID.String()); err != nil || a != "ok queued=8 missing=1" {
				errs <- fmt.Errorf("prefetch: %q, %v", a, err)
				return
			}
		}
	}()
	go func() {
		defer wg.Done()
		for i := 0; i < 5; i++ {
			if a, err := fl.tryAsk("all"); err != nil || a != "ok flushed" {
				errs <- fmt.Errorf("flush: %q, %v", a, err)
				return
			}
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestLookupSharedTier: on a shared tier (nfs), a block another daemon
// published in the directory is found by lookup, though this daemon's
// index never saw it.
func TestLookupSharedTier(t *testing.T) {
	requireFUSE(t)
	dir := t.TempDir()
	st, err := tiers.New(tiers.StackConfig{Logger: testLogger()}, tiers.MemConfig{Capacity: 8 << 20}, tiers.DirConfig{Kind: "nfs", Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close(context.Background()) })
	m := newMountWith(t, st, Options{})
	if err := os.Mkdir(m.path(testModel), 0o755); err != nil {
		t.Fatal(err)
	}
	k, data := testBlock(testModel, 1, 64)
	p := filepath.Join(dir, k.Path())
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o444); err != nil {
		t.Fatal(err)
	}
	abs := absentKeys(testModel, 1)[0]
	if a := openCtl(t, m, "lookup").ask("exists " + testModel + " " + abs.ID.String() + " " + k.ID.String()); a != "ok 1 01" {
		t.Errorf("exists of a block published behind the daemon's back: %q", a)
	}
}
