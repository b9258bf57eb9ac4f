package control

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// TestTgidCachedAllocs: the thread group of a thread seen before comes
// from the cache, checked by one faccessat, without an allocation: every
// request of a process asks for it.
func TestTgidCachedAllocs(t *testing.T) {
	tid := uint32(unix.Gettid())
	if got := Tgid(tid); got != uint32(os.Getpid()) {
		t.Fatalf("Tgid(%d) = %d, want %d", tid, got, os.Getpid())
	}
	var got uint32
	if n := testing.AllocsPerRun(100, func() { got = Tgid(tid) }); n > 0 {
		t.Errorf("a cached Tgid allocates %.1f times, want 0", n)
	}
	if got != uint32(os.Getpid()) {
		t.Errorf("cached Tgid(%d) = %d, want %d", tid, got, os.Getpid())
	}
	if taskExists(uint32(os.Getpid()), 1<<31) {
		t.Error("a thread that does not exist is found")
	}
}
