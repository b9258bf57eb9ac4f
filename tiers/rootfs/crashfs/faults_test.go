package crashfs

import (
	"errors"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// TestFaultsHook: a Faults hook fails the operations its fault matches
// with the errno, holds them with Stall until Clear, counts every
// operation by name and the matched ones, and lets all through once
// cleared.
func TestFaultsHook(t *testing.T) {
	f := NewFaults()
	fs, err := OpenWrapped(f.Before)(t.TempDir(), 0o700)
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	f.Set(Fault{Match: func(op, rel string) bool { return op == "mkdir" && rel == "b" }, Errno: unix.ENOSPC})
	if err := fs.Mkdir("a", 0o700); err != nil {
		t.Fatal(err)
	}
	if err := fs.Mkdir("b", 0o700); !errors.Is(err, unix.ENOSPC) {
		t.Fatalf("mkdir matched by the fault: %v, want ENOSPC", err)
	}
	if c, h := f.Calls("mkdir"), f.Hits(); c != 2 || h != 1 {
		t.Fatalf("%d mkdir calls, %d hits; want 2 and 1", c, h)
	}
	f.Clear()
	if err := fs.Mkdir("b", 0o700); err != nil {
		t.Fatalf("mkdir after Clear: %v", err)
	}

	f.Set(Fault{Stall: true})
	done := make(chan error, 1)
	go func() { done <- fs.SyncDir("b") }()
	for f.Hits() < 2 {
		runtime.Gosched()
	}
	select {
	case err := <-done:
		t.Fatalf("a stalled operation returned before Clear: %v", err)
	default:
	}
	f.Clear()
	if err := <-done; err != nil {
		t.Fatalf("a stalled operation released by Clear: %v", err)
	}
	if n := f.Calls("fsync directory", "mkdir"); n != 4 {
		t.Fatalf("Calls of two names: %d, want 4", n)
	}
}
