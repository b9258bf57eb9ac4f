// Package faultfs is a test harness: a real FUSE filesystem, mounted through
// the kernel, that mirrors a backing directory (a loopback) and fails or
// stalls chosen operations on demand.
//
// It is not a mock. Code under test opens, writes, fsyncs, renames and stats
// files under FS.Dir with ordinary system calls; the kernel VFS forwards them
// to this package, which applies the active Fault rules and otherwise
// performs the operation on the backing directory. A storage tier pointed at
// the mount therefore sees exactly what it would see from a failing disk, a
// full filesystem or a hung network mount: EIO from write(2), ENOSPC from
// open(2) or fsync(2), a stat(2) that does not return.
//
// Every file is opened with direct I/O and the kernel keeps no entry or
// attribute cache, so each read, write and lookup reaches the rules: a write
// fault surfaces at write(2), not later at writeback. Writeback caching and
// FUSE passthrough stay off for the same reason.
//
// A stalled operation blocks until Clear or Unmount; a signal that reaches
// the blocked caller makes it return EINTR (Go's os package retries, which
// stalls again). One limit comes from the loopback: linkat(2) of an
// O_TMPFILE file fails with EXDEV, since a FUSE link request names no open
// file.
//
// Mounting needs root and /dev/fuse (the mount is made with mount(2), no
// fusermount); Mount skips the test where either is missing.
//
// It is for the tests where a real kernel is the point: a daemon over a
// tier that fails, stalls or fills (integration/, fs/), a write(2) of a
// block's bytes that fails (tiers' TestStackFaultEIO and
// TestFilesReplaceFailedKeepsOld: the tiers write through their own
// descriptors, which no rootfs hook sees), and EINTR from a system call
// (tiers' TestInterruptedCallsRetried: the retries live in the real
// calls). An error, a delay or a stall of one of a tier's operations is a
// unit test over crashfs (tiers/rootfs/crashfs: Faults, Gate, Disk), with
// no mount. The package is meant to be imported only from tests:
//
//	fsys := faultfs.Mount(t, t.TempDir())
//	fsys.Inject(faultfs.Fault{Op: faultfs.OpWrite, Errno: syscall.ENOSPC})
//	// ... exercise code that writes under fsys.Dir() ...
//	fsys.Clear()
package faultfs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// FS is a mounted fault-injecting loopback filesystem. Its methods are safe
// for concurrent use.
type FS struct {
	mnt     string
	backing string
	server  *fuse.Server
	calls   [numOps]atomic.Int64

	mu      sync.Mutex
	rules   []Fault
	release chan struct{} // closed to release every stalled operation
	changed chan struct{} // closed whenever the number of stalled operations changes
	stalled int
	closed  bool // unmounted: stalls no longer block
}

// Mount mounts a fault-injecting mirror of the backing directory at a fresh
// temporary directory and returns once the mount is ready. The mount is
// removed when the test ends (see Unmount). Mount skips the test when the
// process is not root or /dev/fuse is missing (it fails it instead when
// UCMFS_REQUIRE_FUSE=1, as in CI), and fails it on any other error.
func Mount(tb testing.TB, backing string) *FS {
	tb.Helper()
	skip := tb.Skipf
	if os.Getenv("UCMFS_REQUIRE_FUSE") == "1" {
		skip = tb.Fatalf
	}
	if os.Geteuid() != 0 {
		skip("faultfs: mounting FUSE with mount(2) needs root")
	}
	if f, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0); err != nil {
		skip("faultfs: no usable FUSE device: %v", err)
	} else {
		f.Close()
	}
	abs, err := filepath.Abs(backing)
	if err != nil {
		tb.Fatalf("faultfs: %v", err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(abs, &st); err != nil {
		tb.Fatalf("faultfs: backing directory: %v", err)
	}
	f := &FS{
		mnt:     tb.TempDir(),
		backing: abs,
		release: make(chan struct{}),
		changed: make(chan struct{}),
	}
	lr := &fs.LoopbackRoot{Path: abs, Dev: uint64(st.Dev)}
	root := &node{LoopbackNode: &fs.LoopbackNode{RootData: lr}, fsys: f}
	lr.RootNode = root

	quiet := log.New(io.Discard, "", 0)
	noCache := time.Duration(0)
	opts := &fs.Options{
		EntryTimeout:    &noCache,
		AttrTimeout:     &noCache,
		NegativeTimeout: &noCache,
		Logger:          quiet,
		MountOptions: fuse.MountOptions{
			DirectMount:       true,
			DirectMountStrict: true,
			FsName:            "faultfs",
			Name:              "faultfs",
			Logger:            quiet,
		},
	}
	srv, err := fs.Mount(f.mnt, root, opts)
	if err != nil {
		tb.Fatalf("faultfs: mount %s: %v", f.mnt, err)
	}
	f.server = srv
	tb.Cleanup(func() {
		if err := f.Unmount(); err != nil {
			tb.Errorf("faultfs: %v", err)
		}
	})
	return f
}

// Dir returns the mount point: the path through which the backing directory
// is seen with faults applied.
func (f *FS) Dir() string { return f.mnt }

// Backing returns the absolute path of the mirrored directory.
func (f *FS) Backing() string { return f.backing }

// Inject adds a rule. From now on, until Clear, every operation it matches
// fails with its Errno or, for a stall, blocks until Clear or Unmount (a
// delay first waits its Delay). When several rules with an Errno or a
// Stall match an operation, the one injected first applies; the Delays of
// all matching rules up to it add up (so a delay-only rule for every
// operation combines with the faults injected after it). Inject
// panics on a rule with no Errno, Stall or Delay, with an unknown Op, or
// with a negative Times.
func (f *FS) Inject(fl Fault) {
	if fl.Op < 0 || fl.Op >= numOps {
		panic(fmt.Sprintf("faultfs: unknown op %d", int(fl.Op)))
	}
	if fl.Times < 0 {
		panic("faultfs: a fault applies Times > 0 times, or always (0)")
	}
	if fl.Errno == 0 && !fl.Stall && fl.Delay <= 0 {
		panic("faultfs: a fault needs an Errno, Stall or Delay")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rules = append(f.rules, fl)
}

// Clear removes every rule and releases every stalled operation. A released
// operation completes with its rule's Errno, or normally when that is zero.
func (f *FS) Clear() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rules = nil
	close(f.release)
	f.release = make(chan struct{})
}

// Calls returns how many operations of kind op the filesystem has received
// since it was mounted, failed ones included; Calls(OpAny) counts them all.
func (f *FS) Calls(op Op) int64 {
	if op == OpAny {
		var n int64
		for i := range f.calls {
			n += f.calls[i].Load()
		}
		return n
	}
	if op < 0 || op >= numOps {
		return 0
	}
	return f.calls[op].Load()
}

// Stalled returns how many operations are blocked in a stall right now.
func (f *FS) Stalled() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stalled
}

// WaitStalled blocks until at least n operations are blocked in a stall, or
// ctx is done. It lets a test know that a call has reached the fault before
// it checks that the call has not returned.
func (f *FS) WaitStalled(ctx context.Context, n int) error {
	for {
		f.mu.Lock()
		got, changed := f.stalled, f.changed
		f.mu.Unlock()
		if got >= n {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("faultfs: %d of %d operations stalled: %w", got, n, ctx.Err())
		}
	}
}

// Unmount releases every stalled operation, makes later stalls return at
// once, and unmounts the filesystem. When the kernel refuses (a file is
// still open under Dir), it detaches the mount lazily instead, so no mount
// is left visible. Calling it again is a no-op. Mount registers it with
// the test's Cleanup.
func (f *FS) Unmount() error {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil
	}
	f.closed = true
	close(f.release)
	f.release = make(chan struct{})
	f.mu.Unlock()

	err := f.server.Unmount()
	if err == nil {
		return nil
	}
	if derr := syscall.Unmount(f.mnt, syscall.MNT_DETACH); derr != nil {
		return fmt.Errorf("unmount %s: %w", f.mnt, errors.Join(err, derr))
	}
	return nil
}

// check counts one operation of kind op on the given mount-relative paths
// and applies the first matching rule: it returns the errno to fail with
// (0: proceed), after blocking for a stall.
func (f *FS) check(ctx context.Context, op Op, paths ...string) syscall.Errno {
	f.calls[op].Add(1)
	f.mu.Lock()
	fl, ok, delay := f.matchLocked(op, paths)
	if delay > 0 && !f.closed {
		f.mu.Unlock()
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return syscall.EINTR
		}
		f.mu.Lock()
	}
	if !ok || !fl.Stall || f.closed {
		f.mu.Unlock()
		return fl.Errno
	}
	release := f.release
	f.setStalledLocked(f.stalled + 1)
	f.mu.Unlock()

	errno := fl.Errno
	select {
	case <-release:
	case <-ctx.Done():
		// The kernel interrupted the request (a signal reached the caller).
		errno = syscall.EINTR
	}
	f.mu.Lock()
	f.setStalledLocked(f.stalled - 1)
	f.mu.Unlock()
	return errno
}

// matchLocked returns the first rule that matches with an Errno or a
// Stall, and the delay to wait first: the sum of the Delays of the
// matching rules up to it (a delay-only rule lets later rules match).
func (f *FS) matchLocked(op Op, paths []string) (Fault, bool, time.Duration) {
	var delay time.Duration
	for i := range f.rules {
		fl := f.rules[i]
		if fl.Times < 0 || !fl.matches(op, paths) {
			continue // lapsed, or not this operation
		}
		if fl.Times > 0 {
			f.rules[i].Times--
			if f.rules[i].Times == 0 {
				f.rules[i].Times = -1 // lapsed
			}
		}
		delay += fl.Delay
		if fl.Errno != 0 || fl.Stall {
			return fl, true, delay
		}
	}
	return Fault{}, false, delay
}

// matches reports whether the rule applies to an operation of kind op on
// paths.
func (fl Fault) matches(op Op, paths []string) bool {
	if fl.Op != OpAny && fl.Op != op {
		return false
	}
	if fl.PathContains == "" {
		return true
	}
	for _, p := range paths {
		if strings.Contains(p, fl.PathContains) {
			return true
		}
	}
	return false
}

func (f *FS) setStalledLocked(n int) {
	f.stalled = n
	close(f.changed)
	f.changed = make(chan struct{})
}
