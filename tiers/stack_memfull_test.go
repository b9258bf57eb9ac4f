package tiers

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ucmfs/ucmfs/tiers/mem"
	"golang.org/x/sys/unix"
)

// TestMemFullEvictsAndRetries: a memory tier on a tmpfs of 64 inodes
// runs out of inodes long before its capacity; once the blocks it holds
// are written back, each publish that meets ENOSPC evicts clean files and
// succeeds, and the stack counts it (mem_full).
func TestMemFullEvictsAndRetries(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: mounts a tmpfs")
	}
	memDir := filepath.Join(t.TempDir(), "mem")
	if err := os.Mkdir(memDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", memDir, "tmpfs", 0, "size=64m,nr_inodes=64,mode=0700"); err != nil {
		t.Skipf("no tmpfs here: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(memDir, unix.MNT_DETACH) })
	s := buildStack(t, StackConfig{}, MemConfig{Capacity: 32 << 20, Dir: memDir, Private: mem.PrivateOff}, DirConfig{Kind: "nvme", Dir: t.TempDir()})
	var n int
	for i := range 200 {
		k, data := testBlock("m", i, 1024)
		if _, err := s.Put(k, data, false); err != nil {
			t.Fatalf("block %d: %v (mem_full %d)", i, err, s.Stats().MemFull)
		}
		if err := s.FlushAll(context.Background(), ""); err != nil {
			t.Fatal(err)
		}
		n++
	}
	st := s.Stats()
	if st.MemFull == 0 || st.Evictions == 0 {
		t.Errorf("%d blocks on 64 inodes: mem_full %d, evictions %d; want both above 0", n, st.MemFull, st.Evictions)
	}
	for i := range 200 {
		k, data := testBlock("m", i, 1024)
		if got := readAll(t, s, k); string(got) != string(data) {
			t.Fatalf("block %d reads back wrong", i)
		}
	}
}
