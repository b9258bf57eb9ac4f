package tiers

import (
	"errors"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestTierNotWritable: a tier directory the daemon cannot write (here a
// read-only filesystem) is refused at open as not writable, naming the
// daemon's uid, not as "in use by another daemon"; a directory another
// open tier holds still says that.
func TestTierNotWritable(t *testing.T) {
	ro := t.TempDir()
	if err := unix.Mount("tmpfs", ro, "tmpfs", unix.MS_RDONLY, "size=1m"); err != nil {
		t.Fatalf("a read-only tmpfs for the test: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(ro, unix.MNT_DETACH) })
	_, err := New(StackConfig{Logger: testLogger()}, MemConfig{Capacity: 1 << 20}, DirConfig{Kind: "nvme", Dir: ro})
	if err == nil || !strings.Contains(err.Error(), "not writable") || errors.Is(err, ErrLocked) {
		t.Errorf("a read-only tier: %v, want \"not writable\"", err)
	}
	dir := t.TempDir()
	newTestStack(t, 1<<20, dir, StackConfig{})
	_, err = New(StackConfig{Logger: testLogger()}, MemConfig{Capacity: 1 << 20}, DirConfig{Kind: "nvme", Dir: dir})
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "in use by another daemon") {
		t.Errorf("a tier held by another stack: %v", err)
	}
}
