package tiers_test

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/ucmfs/ucmfs/tiers"
	"github.com/ucmfs/ucmfs/tiers/tiertest"
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

func TestMemLocksPages(t *testing.T) {
	m := newMem(t, tiers.MemConfig{Capacity: 64 << 20})
	before := vmLocked(t)
	sizes := []int{1 << 20, 2<<20 + 64, 4096}
	var total int64
	for i, size := range sizes {
		key := tiertest.Key("m", i)
		data := tiertest.Payload(uint64(i), size)
		tiertest.Put(t, m, key, data, tiers.CommitOptions{})
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

func TestMemMappingBudget(t *testing.T) {
	m := newMem(t, tiers.MemConfig{Capacity: 1 << 20, MaxMappings: 2})
	for i := 0; i < 3; i++ {
		tiertest.Put(t, m, tiertest.Key("m", i), tiertest.Payload(uint64(i), 10000), tiers.CommitOptions{})
	}
	if m.Mapping(tiertest.Key("m", 0)) == nil {
		t.Skip("this host does not let the process lock memory")
	}
	if m.Mapping(tiertest.Key("m", 2)) != nil || m.LockedBytes() != 20000 {
		t.Fatalf("budget of 2 mappings exceeded: LockedBytes %d", m.LockedBytes())
	}
	// The unlocked file is still a normal file.
	if !bytes.Equal(tiertest.Read(t, m, tiertest.Key("m", 2)), tiertest.Payload(2, 10000)) {
		t.Fatal("unlocked file has other bytes")
	}
	// Freeing a mapping lets the next commit lock again.
	m.Remove(tiertest.Key("m", 0))
	tiertest.Put(t, m, tiertest.Key("m", 3), tiertest.Payload(3, 10000), tiers.CommitOptions{})
	if m.Mapping(tiertest.Key("m", 3)) == nil || m.LockedBytes() != 20000 {
		t.Fatalf("no mapping after one was freed: LockedBytes %d", m.LockedBytes())
	}
	// Empty files and a disabled budget map nothing.
	tiertest.Put(t, m, tiertest.Key("m", 4), nil, tiers.CommitOptions{})
	if m.Mapping(tiertest.Key("m", 4)) != nil {
		t.Fatal("empty file mapped")
	}
	off := newMem(t, tiers.MemConfig{Capacity: 1 << 20, MaxMappings: -1})
	tiertest.Put(t, off, tiertest.Key("m", 0), []byte("data"), tiers.CommitOptions{})
	if off.Mapping(tiertest.Key("m", 0)) != nil || off.LockedBytes() != 0 {
		t.Fatal("MaxMappings < 0 still locks")
	}
}
