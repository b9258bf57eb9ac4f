package mem_test

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/internal/tiertest"
	"github.com/ucmfs/ucmfs/tiers/mem"
	"github.com/ucmfs/ucmfs/tiers/tier"
)

// vmLocked returns the process's locked memory (VmLck) in bytes.
func vmLocked(t *testing.T) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmLck:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Skip("no VmLck line")
	return 0
}

// putLocked commits data as key and waits for the locking worker.
func putLocked(t *testing.T, m *mem.Tier, key format.Key, data []byte) {
	t.Helper()
	tiertest.Put(t, m, key, data, tier.CommitOptions{})
	m.WaitLocked()
}

// TestMemLocksPages: with Lock "always" (what "auto" does while swap is
// active) committed files are mapped and locked after commit, and
// unlocked when they go.
func TestMemLocksPages(t *testing.T) {
	m := newMem(t, mem.Config{Capacity: 64 << 20, Lock: mem.LockAlways})
	if !m.PagesLocked() {
		t.Fatal("Lock always does not lock")
	}
	before := vmLocked(t)
	sizes := []int{1 << 20, 2<<20 + 64, 4096}
	var total int64
	for i, size := range sizes {
		key := tiertest.Key("m", i)
		data := tiertest.Payload(uint64(i), size)
		putLocked(t, m, key, data)
		total += int64(size)
		mp := m.Mapping(key)
		if mp == nil {
			t.Skip("this host does not let the process lock memory")
		}
		if !bytes.Equal(mp, data) {
			t.Fatalf("mapping of %s does not hold the file's bytes", key)
		}
	}
	if got := m.LockedBytes(); got != total {
		t.Fatalf("LockedBytes %d, want %d", got, total)
	}
	if grew := vmLocked(t) - before; grew < total {
		t.Fatalf("VmLck grew by %d bytes, want at least %d", grew, total)
	}
	if err := m.Remove(tiertest.Key("m", 0)); err != nil {
		t.Fatal(err)
	}
	if got := m.LockedBytes(); got != total-1<<20 {
		t.Fatalf("LockedBytes after remove %d, want %d", got, total-1<<20)
	}
	if m.Mapping(tiertest.Key("m", 0)) != nil {
		t.Fatal("removed file still mapped")
	}
	m.SetDirty(tiertest.Key("m", 1), false)
	m.EvictClean(64 << 20)
	if got := m.LockedBytes(); got != 4096 {
		t.Fatalf("LockedBytes after eviction %d, want 4096", got)
	}
	m.Close()
	if got := m.LockedBytes(); got != 0 {
		t.Fatalf("LockedBytes after Close %d", got)
	}
}

// TestMemLockSkipsRemoved: a file removed before the locking worker got
// to it is not left mapped.
func TestMemLockSkipsRemoved(t *testing.T) {
	m := newMem(t, mem.Config{Capacity: 64 << 20, Lock: mem.LockAlways})
	for i := 0; i < 20; i++ {
		key := tiertest.Key("m", i)
		tiertest.Put(t, m, key, tiertest.Payload(uint64(i), 256<<10), tier.CommitOptions{})
		if err := m.Remove(key); err != nil {
			t.Fatal(err)
		}
	}
	m.WaitLocked()
	if m.MappedBytes() != 0 || m.LockedBytes() != 0 {
		t.Fatalf("removed files left mapped: %d bytes, %d locked", m.MappedBytes(), m.LockedBytes())
	}
	// Close with files still queued closes them: nothing is left mapped.
	for i := 0; i < 20; i++ {
		tiertest.Put(t, m, tiertest.Key("n", i), tiertest.Payload(uint64(i), 256<<10), tier.CommitOptions{})
	}
	m.Close()
	if m.MappedBytes() != 0 {
		t.Fatalf("after Close %d bytes mapped", m.MappedBytes())
	}
}

// TestMemMapsWithoutLocking: with Lock "never" (what "auto" does without
// swap) files are mapped at commit, not locked.
func TestMemMapsWithoutLocking(t *testing.T) {
	m := newMem(t, mem.Config{Capacity: 64 << 20, Lock: mem.LockNever})
	if m.PagesLocked() {
		t.Fatal("Lock never locks")
	}
	before := vmLocked(t)
	key := tiertest.Key("m", 1)
	data := tiertest.Payload(1, 2<<20)
	tiertest.Put(t, m, key, data, tier.CommitOptions{})
	mp := m.Mapping(key)
	if mp == nil || !bytes.Equal(mp, data) {
		t.Fatal("the file is not mapped at commit")
	}
	if m.LockedBytes() != 0 || m.MappedBytes() != int64(len(data)) {
		t.Fatalf("LockedBytes %d, MappedBytes %d", m.LockedBytes(), m.MappedBytes())
	}
	if grew := vmLocked(t) - before; grew != 0 {
		t.Fatalf("VmLck grew by %d bytes without locking", grew)
	}
	if _, err := mem.New(mem.Config{Capacity: 1 << 20, Dir: shmDir(t), Lock: "sometimes", Logger: quiet}); err == nil {
		t.Fatal("an unknown lock mode is accepted")
	}
}

func TestMemMappingBudget(t *testing.T) {
	for _, mode := range []string{mem.LockNever, mem.LockAlways} {
		m := newMem(t, mem.Config{Capacity: 1 << 20, MaxMappings: 2, Lock: mode})
		for i := 0; i < 3; i++ {
			putLocked(t, m, tiertest.Key("m", i), tiertest.Payload(uint64(i), 10000))
		}
		if m.Mapping(tiertest.Key("m", 0)) == nil {
			t.Skip("this host does not let the process lock memory")
		}
		if m.Mapping(tiertest.Key("m", 2)) != nil || m.MappedBytes() != 20000 {
			t.Fatalf("%s: budget of 2 mappings exceeded: MappedBytes %d", mode, m.MappedBytes())
		}
		// The unmapped file is still a normal file.
		if !bytes.Equal(tiertest.Read(t, m, tiertest.Key("m", 2)), tiertest.Payload(2, 10000)) {
			t.Fatal("unmapped file has other bytes")
		}
		// Freeing a mapping lets the next commit map again.
		m.Remove(tiertest.Key("m", 0))
		putLocked(t, m, tiertest.Key("m", 3), tiertest.Payload(3, 10000))
		if m.Mapping(tiertest.Key("m", 3)) == nil || m.MappedBytes() != 20000 {
			t.Fatalf("%s: no mapping after one was freed: MappedBytes %d", mode, m.MappedBytes())
		}
		// Empty files and a disabled budget map nothing.
		putLocked(t, m, tiertest.Key("m", 4), nil)
		if m.Mapping(tiertest.Key("m", 4)) != nil {
			t.Fatal("empty file mapped")
		}
		off := newMem(t, mem.Config{Capacity: 1 << 20, MaxMappings: -1, Lock: mode})
		putLocked(t, off, tiertest.Key("m", 0), []byte("data"))
		if off.Mapping(tiertest.Key("m", 0)) != nil || off.MappedBytes() != 0 {
			t.Fatalf("%s: MaxMappings < 0 still maps", mode)
		}
	}
}
