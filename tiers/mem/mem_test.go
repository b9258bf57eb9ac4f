package mem_test

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/internal/tiertest"
	"github.com/ucmfs/ucmfs/tiers/mem"
	"github.com/ucmfs/ucmfs/tiers/tier"
)

// quiet discards the tiers' log lines in tests.
var quiet = slog.New(slog.DiscardHandler)

// shmDir returns a fresh directory on /dev/shm (tmpfs), removed after the test.
func shmDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("/dev/shm", "ucmfs-test-")
	if err != nil {
		t.Skipf("no /dev/shm: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// newMem returns a MemTier of the given capacity under its own tmpfs dir.
func newMem(t testing.TB, cfg mem.Config) *mem.Tier {
	t.Helper()
	if cfg.Dir == "" {
		cfg.Dir = shmDir(t)
	}
	if cfg.Logger == nil {
		cfg.Logger = quiet
	}
	m, err := mem.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func TestMemConformance(t *testing.T) {
	tiertest.Run(t, func(t *testing.T) tier.Tier {
		return newMem(t, mem.Config{Capacity: 64 << 20})
	})
}

func TestMemLayout(t *testing.T) {
	m := newMem(t, mem.Config{Capacity: 1 << 20})
	key := tiertest.Key("llama", 3)
	data := tiertest.Payload(3, 5000)
	tiertest.Put(t, m, key, data, tier.CommitOptions{})
	p := filepath.Join(m.Dir(), key.Path())
	got, err := os.ReadFile(p)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("published file %s: %d bytes, %v", p, len(got), err)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o444 {
		t.Fatalf("published file mode %v, want 0444", fi.Mode().Perm())
	}
	ents, _ := os.ReadDir(m.Dir())
	for _, e := range ents {
		if e.Name() != "llama" && e.Name() != ".ucmfs.lock" {
			t.Fatalf("unexpected entry %q left in the private directory", e.Name())
		}
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(m.Dir()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Close left the private directory: %v", err)
	}
}

func TestMemRejectsDisk(t *testing.T) {
	dir := t.TempDir() // on the root filesystem, not tmpfs
	if _, err := mem.New(mem.Config{Capacity: 1 << 20, Dir: dir, Logger: quiet, Private: mem.PrivateOff}); err == nil {
		t.Fatal("memory tier accepted a directory that is not RAM-backed")
	}
	m := newMem(t, mem.Config{Capacity: 1 << 20, Dir: dir, AllowDisk: true, Private: mem.PrivateOff})
	tiertest.Put(t, m, tiertest.Key("m", 1), []byte("x"), tier.CommitOptions{})
	if _, err := mem.New(mem.Config{Capacity: 0, Dir: shmDir(t), Logger: quiet}); err == nil {
		t.Fatal("memory tier accepted capacity 0")
	}
}

func TestMemCapacity(t *testing.T) {
	m := newMem(t, mem.Config{Capacity: 40960})
	a, b := tiertest.Key("m", 1), tiertest.Key("m", 2)
	tiertest.Put(t, m, a, tiertest.Payload(1, 24576), tier.CommitOptions{})
	if r := m.Room(); r != 16384 {
		t.Fatalf("Room %d, want 16384", r)
	}
	w, err := m.Create(b)
	if err != nil {
		t.Fatal(err)
	}
	data := tiertest.Payload(2, 20480)
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Commit(tier.CommitOptions{}); !errors.Is(err, tier.ErrFull) {
		t.Fatalf("commit over capacity: %v, want ErrFull", err)
	}
	if u := m.Usage(); u.Used != 24576 || u.Files != 1 {
		t.Fatalf("usage after ErrFull: %+v", u)
	}
	// The Writer stays usable: make room and commit again.
	if err := m.Remove(a); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Commit(tier.CommitOptions{}); err != nil {
		t.Fatalf("commit after making room: %v", err)
	}
	if !bytes.Equal(tiertest.Read(t, m, b), data) {
		t.Fatal("bytes differ after a retried commit")
	}
	// Exactly full is allowed.
	tiertest.Put(t, m, a, tiertest.Payload(3, 20480), tier.CommitOptions{})
	if u := m.Usage(); u.Used != 40960 || m.Room() != 0 {
		t.Fatalf("usage when exactly full: %+v room %d", u, m.Room())
	}
}

func TestMemFlags(t *testing.T) {
	m := newMem(t, mem.Config{Capacity: 1 << 20})
	key, absent := tiertest.Key("m", 1), tiertest.Key("m", 2)
	tiertest.Put(t, m, key, []byte("abc"), tier.CommitOptions{})
	if !m.Dirty(key) || m.Pinned(key) {
		t.Fatal("a new file must be dirty and not pinned")
	}
	if err := m.SetDirty(key, false); err != nil || m.Dirty(key) {
		t.Fatalf("SetDirty(false): %v", err)
	}
	if err := m.SetPinned(key, true); err != nil || !m.Pinned(key) {
		t.Fatalf("SetPinned(true): %v", err)
	}
	if err := m.SetDirty(absent, true); !errors.Is(err, tier.ErrNotFound) {
		t.Fatalf("SetDirty of an absent key: %v", err)
	}
	if err := m.SetPinned(absent, true); !errors.Is(err, tier.ErrNotFound) {
		t.Fatalf("SetPinned of an absent key: %v", err)
	}
	if m.Dirty(absent) || m.Pinned(absent) {
		t.Fatal("an absent key reports flags")
	}
}

func TestMemEvictClean(t *testing.T) {
	m := newMem(t, mem.Config{Capacity: 10 * 4096})
	key := func(i int) format.Key { return tiertest.Key("m", i) }
	for i := 0; i < 10; i++ {
		tiertest.Put(t, m, key(i), tiertest.Payload(uint64(i), 4096), tier.CommitOptions{})
	}
	if freed, ev := m.EvictClean(3 * 4096); freed != 0 || len(ev) != 0 {
		t.Fatalf("evicted dirty files: %d bytes %v", freed, ev)
	}
	for i := 0; i < 10; i++ {
		if i != 1 {
			m.SetDirty(key(i), false)
		}
	}
	m.SetPinned(key(2), true)
	m.Touch(key(0)) // most recently used now
	// LRU order, oldest first: 1 (dirty), 2 (pinned), 3, 4, ..., 9, 0.
	freed, ev := m.EvictClean(3 * 4096)
	if freed != 3*4096 || len(ev) != 3 || ev[0] != key(3) || ev[1] != key(4) || ev[2] != key(5) {
		t.Fatalf("EvictClean(3 * 4096) = %d %v, want 12288 [3 4 5]", freed, ev)
	}
	if m.Room() < 3*4096 {
		t.Fatalf("room %d after evicting for 12288", m.Room())
	}
	for _, k := range ev {
		if _, err := m.Stat(k); !errors.Is(err, tier.ErrNotFound) {
			t.Fatalf("evicted %s still indexed: %v", k, err)
		}
		if _, err := os.Stat(filepath.Join(m.Dir(), k.Path())); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("evicted %s still on disk: %v", k, err)
		}
	}
	// Opening counts as a use: 6 moves behind 0.
	f, err := m.Open(key(6))
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	freed, ev = m.EvictClean(1 << 30)
	want := []format.Key{key(7), key(8), key(9), key(0), key(6)}
	if freed != 5*4096 || len(ev) != len(want) {
		t.Fatalf("EvictClean(all) = %d %v, want %v", freed, ev, want)
	}
	for i := range want {
		if ev[i] != want[i] {
			t.Fatalf("eviction order %v, want %v", ev, want)
		}
	}
	if u := m.Usage(); u.Files != 2 || u.Used != 2*4096 {
		t.Fatalf("left %+v, want the dirty and the pinned file", u)
	}
}

func TestMemRemoveModel(t *testing.T) {
	m := newMem(t, mem.Config{Capacity: 1 << 20})
	for i := 0; i < 4; i++ {
		tiertest.Put(t, m, tiertest.Key("a", i), []byte("aaaa"), tier.CommitOptions{})
		tiertest.Put(t, m, tiertest.Key("b", i), []byte("bb"), tier.CommitOptions{})
	}
	if err := m.RemoveModel("a"); err != nil {
		t.Fatal(err)
	}
	if u := m.Usage(); u.Files != 4 || u.Used != 8 {
		t.Fatalf("usage after RemoveModel: %+v", u)
	}
	if _, err := os.Stat(filepath.Join(m.Dir(), "a")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("model directory left behind")
	}
	if got := m.Models(); len(got) != 1 || got[0] != "b" {
		t.Fatalf("Models() = %v", got)
	}
	if err := m.RemoveModel("../x"); err == nil {
		t.Fatal("RemoveModel accepted an invalid name")
	}
	// The model can be written again.
	tiertest.Put(t, m, tiertest.Key("a", 0), []byte("again"), tier.CommitOptions{})
}

// TestMemChargesPages: a file takes whole pages of the memory tier's
// tmpfs, so it takes whole pages of its capacity: 8 files of 64 bytes
// fill 8 pages, and a 9th does not fit, though 512 bytes are "used".
func TestMemChargesPages(t *testing.T) {
	page := int64(os.Getpagesize())
	m := newMem(t, mem.Config{Capacity: 8 * page})
	for i := 0; i < 8; i++ {
		tiertest.Put(t, m, tiertest.Key("m", i), tiertest.Payload(uint64(i), 64), tier.CommitOptions{})
	}
	if u := m.Usage(); u.Used != 512 || u.Charged != 8*page || m.Room() != 0 {
		t.Fatalf("usage of 8 files of 64 bytes: %+v, room %d; want 512 bytes charged as 8 pages", u, m.Room())
	}
	w, err := m.Create(tiertest.Key("m", 8))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(tiertest.Payload(8, 64)); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Commit(tier.CommitOptions{}); !errors.Is(err, tier.ErrFull) {
		t.Fatalf("a 9th file: %v, want ErrFull", err)
	}
	w.Abort()
}
