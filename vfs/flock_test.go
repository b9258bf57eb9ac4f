package vfs

import (
	"context"
	"errors"
	"syscall"
	"testing"
)

// TestFlockTable: the daemon's flock rules (flock.go) without a mount:
// exclusive against anything, shared with shared, conversion, LOCK_UN
// and release of an owner's locks, a waiter woken by the release, a
// waiter interrupted, and nothing kept once every lock is gone.
func TestFlockTable(t *testing.T) {
	var tb Flocks
	ctx := context.Background()
	set := func(name string, owner uint64, typ uint32) error { return tb.Set(ctx, name, owner, typ, false, nil) }
	if err := set("a", 1, syscall.F_WRLCK); err != nil {
		t.Fatal(err)
	}
	if err := set("a", 2, syscall.F_RDLCK); !errors.Is(err, ErrFlockBusy) {
		t.Errorf("shared against exclusive: %v, want busy", err)
	}
	if err := set("a", 1, syscall.F_RDLCK); err != nil { // its own lock, made shared
		t.Errorf("conversion to shared: %v", err)
	}
	if err := set("a", 2, syscall.F_RDLCK); err != nil {
		t.Errorf("shared with shared: %v", err)
	}
	if err := set("a", 1, syscall.F_WRLCK); !errors.Is(err, ErrFlockBusy) {
		t.Errorf("exclusive against another's shared: %v, want busy", err)
	}
	if err := set("a", 2, syscall.F_UNLCK); err != nil {
		t.Fatal(err)
	}
	if err := set("a", 1, syscall.F_WRLCK); err != nil {
		t.Errorf("exclusive once the other shared went: %v", err)
	}

	woken := make(chan error, 1)
	go func() { woken <- tb.Set(ctx, "a", 3, syscall.F_WRLCK, true, nil) }()
	tb.Release(1) // its open file closed
	if err := <-woken; err != nil {
		t.Errorf("waiter after the release: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	interrupted := make(chan error, 1)
	go func() { interrupted <- tb.Set(cctx, "a", 4, syscall.F_WRLCK, true, nil) }()
	cancel()
	if err := <-interrupted; !errors.Is(err, ErrFlockInterrupted) {
		t.Errorf("interrupted waiter: %v", err)
	}
	if err := set("b", 3, syscall.F_RDLCK); err != nil {
		t.Fatal(err)
	}
	if err := set("b", 3, syscall.F_UNLCK); err != nil { // every lock of owner 3, "a" too
		t.Fatal(err)
	}
	if len(tb.locks) != 0 || len(tb.owners) != 0 {
		t.Errorf("after every lock went the table keeps %d locks, %d owners", len(tb.locks), len(tb.owners))
	}
}
