package mem_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/internal/tiertest"
	"github.com/ucmfs/ucmfs/tiers/mem"
	"github.com/ucmfs/ucmfs/tiers/tier"
)

// readMem reads key's file from the memory tier.
func readMem(t *testing.T, m *mem.Tier, key interface{ Path() string }) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(m.Dir(), key.Path()))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestMemRemoveLate: a late removal leaves the index at once; its file
// is released by the worker, by the next publish of its key, or at once
// past the bound; a publish of the same key never loses its new file.
func TestMemRemoveLate(t *testing.T) {
	m := newMem(t, mem.Config{Capacity: 64 << 20, Private: mem.PrivateOff})
	key := tiertest.Key("llama", 1)
	tiertest.Put(t, m, key, tiertest.Payload(1, 5000), tier.CommitOptions{})

	resume := m.HoldLate()
	if err := m.RemoveLate(key); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Stat(key); !errors.Is(err, tier.ErrNotFound) {
		t.Fatalf("stat after RemoveLate: %v, want ErrNotFound", err)
	}
	if err := m.RemoveLate(key); !errors.Is(err, tier.ErrNotFound) {
		t.Fatalf("second RemoveLate: %v, want ErrNotFound", err)
	}
	p := filepath.Join(m.Dir(), key.Path())
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("the file went before its release: %v", err)
	}
	resume()

	// A publish of the key settles the old file first.
	data := tiertest.Payload(2, 7000)
	tiertest.Put(t, m, key, data, tier.CommitOptions{})
	if got := readMem(t, m, key); !bytes.Equal(got, data) {
		t.Fatalf("after the republish: %d bytes, want the new %d", len(got), len(data))
	}

	// Past the bound, a removal releases in line.
	resume = m.HoldLate()
	n := mem.LateMaxFiles + 1
	for i := range n {
		tiertest.Put(t, m, tiertest.Key("bound", i), []byte("x"), tier.CommitOptions{})
	}
	for i := range n {
		if err := m.RemoveLate(tiertest.Key("bound", i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(m.Dir(), tiertest.Key("bound", n-1).Path())); !os.IsNotExist(err) {
		t.Fatalf("the removal past the bound left its file: %v", err)
	}
	if _, err := os.Stat(filepath.Join(m.Dir(), tiertest.Key("bound", 0).Path())); err != nil {
		t.Fatalf("a removal within the bound released at once: %v", err)
	}
	resume()
	m.SettleAll()
	for i := range n {
		if _, err := os.Stat(filepath.Join(m.Dir(), tiertest.Key("bound", i).Path())); !os.IsNotExist(err) {
			t.Fatalf("file %d left after SettleAll: %v", i, err)
		}
	}
}

// TestMemRemoveLateUnder: a File removed late (d/a) does not keep a File
// beneath a directory of its name (d/a/b) from being published: the
// publish releases it first, though the worker is held.
func TestMemRemoveLateUnder(t *testing.T) {
	m := newMem(t, mem.Config{Capacity: 64 << 20, Private: mem.PrivateOff})
	file := format.FileKey("files", "d/a")
	tiertest.Put(t, m, file, []byte("a file"), tier.CommitOptions{})
	resume := sync.OnceFunc(m.HoldLate())
	defer resume()
	if err := m.RemoveLate(file); err != nil {
		t.Fatal(err)
	}
	// The publish below waits for the worker's hold, which this releases
	// (the old code failed at once, ENOTDIR, while it was held).
	time.AfterFunc(100*time.Millisecond, resume)
	below := format.FileKey("files", "d/a/b")
	tiertest.Put(t, m, below, []byte("beneath"), tier.CommitOptions{})
	if got := readMem(t, m, below); string(got) != "beneath" {
		t.Fatalf("d/a/b holds %q", got)
	}

	// The same where the tier's cache of directories still names e/f as
	// one: made for e/f/x, removed (the stack's RemoveDir removes it on
	// disk), a File e/f published and removed late, then e/f/y.
	x := format.FileKey("files", "e/f/x")
	tiertest.Put(t, m, x, []byte("x"), tier.CommitOptions{})
	if err := m.RemoveLate(x); err != nil {
		t.Fatal(err)
	}
	m.SettleAll()
	if err := os.Remove(filepath.Join(m.Dir(), "files", "e", "f")); err != nil {
		t.Fatal(err)
	}
	ef := format.FileKey("files", "e/f")
	tiertest.Put(t, m, ef, []byte("a file"), tier.CommitOptions{})
	resume2 := sync.OnceFunc(m.HoldLate())
	defer resume2()
	if err := m.RemoveLate(ef); err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(100*time.Millisecond, resume2)
	y := format.FileKey("files", "e/f/y")
	tiertest.Put(t, m, y, []byte("y"), tier.CommitOptions{})
	if got := readMem(t, m, y); string(got) != "y" {
		t.Fatalf("e/f/y holds %q", got)
	}
}

// TestMemRemoveLateRace: writers publish and remove the same keys while
// the worker releases; every read of a published file gets its bytes.
func TestMemRemoveLateRace(t *testing.T) {
	m := newMem(t, mem.Config{Capacity: 64 << 20})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			key := tiertest.Key("race", w)
			for i := range 300 {
				data := tiertest.Payload(uint64(w*1000+i), 4096+i)
				tiertest.Put(t, m, key, data, tier.CommitOptions{})
				f, err := m.Open(key)
				if err != nil {
					t.Errorf("open %d: %v", i, err)
					return
				}
				got, err := io.ReadAll(f)
				f.Close()
				if err != nil || !bytes.Equal(got, data) {
					t.Errorf("round %d: read %d bytes (%v), want %d", i, len(got), err, len(data))
					return
				}
				if err := m.RemoveLate(key); err != nil {
					t.Errorf("remove %d: %v", i, err)
					return
				}
			}
		})
	}
	wg.Wait()
}
