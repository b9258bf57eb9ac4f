package mem_test

import (
	"bytes"
	"errors"
	"io"
	"sync"
	"testing"
	"unsafe"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/internal/tiertest"
	"github.com/ucmfs/ucmfs/tiers/mem"
	"github.com/ucmfs/ucmfs/tiers/tier"
)

// hostBook is a HostRegistrar that keeps the registered ranges, as a
// device's bookkeeping does, and checks the calls: no overlap, every
// Unregister of a registered start and length, and the range still mapped
// when it is unregistered (it reads the first and last byte, which would
// fault after munmap).
type hostBook struct {
	mu       sync.Mutex
	live     map[uintptr][]byte
	total    int // Register calls that succeeded
	refuse   bool
	stuck    bool // Unregister fails, leaving the range registered
	problems []string
}

func newHostBook() *hostBook { return &hostBook{live: make(map[uintptr][]byte)} }

var errRefused = errors.New("refused")

func (h *hostBook) Register(b []byte) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.refuse {
		return errRefused
	}
	start := uintptr(unsafe.Pointer(&b[0]))
	for s, r := range h.live {
		if start < s+uintptr(len(r)) && s < start+uintptr(len(b)) {
			h.problems = append(h.problems, "overlapping registration")
		}
	}
	h.live[start] = b
	h.total++
	return nil
}

func (h *hostBook) Unregister(b []byte) error {
	_ = b[0] + b[len(b)-1] // faults if already unmapped
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stuck {
		return errRefused
	}
	start := uintptr(unsafe.Pointer(&b[0]))
	r, ok := h.live[start]
	if !ok || len(r) != len(b) {
		h.problems = append(h.problems, "unregister of a range not registered")
		return errRefused
	}
	delete(h.live, start)
	return nil
}

// registered reports whether exactly b is registered.
func (h *hostBook) registered(b []byte) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	r, ok := h.live[uintptr(unsafe.Pointer(&b[0]))]
	return ok && len(r) == len(b)
}

func (h *hostBook) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.live)
}

func (h *hostBook) check(t *testing.T) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, p := range h.problems {
		t.Error(p)
	}
}

// TestMemHostRegistrar: every mapping the tier locks is registered, and
// unregistered before it goes, by Remove, EvictClean, RemoveModel and
// Close.
func TestMemHostRegistrar(t *testing.T) {
	book := newHostBook()
	m := newMem(t, mem.Config{Capacity: 64 << 20, Host: book})
	keys := make([]format.Key, 6)
	for i := range keys {
		keys[i] = tiertest.Key("m", i)
		if i >= 4 {
			keys[i] = tiertest.Key("other", i)
		}
		data := tiertest.Payload(uint64(i), 64<<10+i)
		tiertest.Put(t, m, keys[i], data, tier.CommitOptions{})
		mp := m.Mapping(keys[i])
		if mp == nil {
			t.Skip("this host does not let the process lock memory")
		}
		if !bytes.Equal(mp, data) || !book.registered(mp) {
			t.Fatalf("%s: the mapping is not the registered file", keys[i])
		}
	}
	if book.count() != len(keys) {
		t.Fatalf("%d ranges registered, want %d", book.count(), len(keys))
	}
	if err := m.Remove(keys[0]); err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		m.SetDirty(k, false)
	}
	m.SetPinned(keys[2], true)
	if _, ev := m.EvictClean(1 << 62); len(ev) != 4 { // all clean ones but the pinned one
		t.Fatalf("evicted %v", ev)
	}
	if book.count() != 1 || !book.registered(m.Mapping(keys[2])) {
		t.Fatalf("after evictions %d ranges registered, want the pinned block's only", book.count())
	}
	if err := m.RemoveModel("m"); err != nil {
		t.Fatal(err)
	}
	if book.count() != 0 {
		t.Fatalf("after RemoveModel %d ranges registered", book.count())
	}
	tiertest.Put(t, m, keys[0], []byte("again"), tier.CommitOptions{})
	m.Close()
	if book.count() != 0 || book.total != len(keys)+1 {
		t.Fatalf("after Close %d ranges registered, %d registrations", book.count(), book.total)
	}
	book.check(t)
}

// TestMemHostRegistrarRefuses: a mapping the registrar refuses is not
// kept; the file is stored and readable all the same.
func TestMemHostRegistrarRefuses(t *testing.T) {
	book := newHostBook()
	book.refuse = true
	m := newMem(t, mem.Config{Capacity: 64 << 20, Host: book})
	key := tiertest.Key("m", 1)
	data := tiertest.Payload(1, 100<<10)
	tiertest.Put(t, m, key, data, tier.CommitOptions{})
	if m.Mapping(key) != nil || m.LockedBytes() != 0 {
		t.Fatalf("a refused mapping is kept: %d bytes locked", m.LockedBytes())
	}
	f, err := m.Open(key)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := io.ReadAll(f)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes, %v", len(got), err)
	}
	if err := m.Remove(key); err != nil {
		t.Fatal(err)
	}
	book.check(t)
}

// TestMemHostRegistrarLocked: with locking on, a registrar still gets each
// mapping at commit, locked first.
func TestMemHostRegistrarLocked(t *testing.T) {
	book := newHostBook()
	m := newMem(t, mem.Config{Capacity: 64 << 20, Host: book, Lock: mem.LockAlways})
	key := tiertest.Key("m", 1)
	data := tiertest.Payload(1, 300<<10)
	tiertest.Put(t, m, key, data, tier.CommitOptions{})
	mp := m.Mapping(key)
	if mp == nil {
		t.Skip("this host does not let the process lock memory")
	}
	if !bytes.Equal(mp, data) || !book.registered(mp) || m.LockedBytes() != int64(len(data)) {
		t.Fatalf("mapping at commit: registered %v, %d bytes locked", book.registered(mp), m.LockedBytes())
	}
	if err := m.Remove(key); err != nil {
		t.Fatal(err)
	}
	if book.count() != 0 || m.LockedBytes() != 0 {
		t.Fatalf("after Remove %d ranges registered, %d bytes locked", book.count(), m.LockedBytes())
	}
	book.check(t)
}

// TestMemHostUnregisterFails: a mapping the registrar fails to unregister
// is never unmapped under its registration: it stays mapped (readable),
// counted in LeakedBytes, and Close unregisters and unmaps it once the
// registrar lets go.
func TestMemHostUnregisterFails(t *testing.T) {
	book := newHostBook()
	m := newMem(t, mem.Config{Capacity: 64 << 20, Host: book})
	key := tiertest.Key("m", 1)
	data := tiertest.Payload(1, 100<<10)
	tiertest.Put(t, m, key, data, tier.CommitOptions{})
	mp := m.Mapping(key)
	if mp == nil {
		t.Skip("this host does not let the process map memory")
	}
	book.mu.Lock()
	book.stuck = true
	book.mu.Unlock()
	if err := m.Remove(key); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(mp, data) { // faults if it was unmapped
		t.Fatal("the kept mapping changed")
	}
	if !book.registered(mp) || m.LeakedBytes() != int64(len(data)) || m.MappedBytes() != int64(len(data)) {
		t.Fatalf("after a failed unregister: registered %v, leaked %d, mapped %d", book.registered(mp), m.LeakedBytes(), m.MappedBytes())
	}
	book.mu.Lock()
	book.stuck = false
	book.mu.Unlock()
	m.Close()
	if book.count() != 0 || m.LeakedBytes() != 0 || m.MappedBytes() != 0 {
		t.Fatalf("after Close: %d ranges registered, leaked %d, mapped %d", book.count(), m.LeakedBytes(), m.MappedBytes())
	}
	book.check(t)
}
