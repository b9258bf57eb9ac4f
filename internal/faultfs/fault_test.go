package faultfs_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ucmfs/ucmfs/internal/faultfs"
)

// patience bounds waits that must end; it only turns a hang into a failure.
const patience = time.Minute

// TestErrnoPerOp injects EIO for one kind of operation at a time and checks
// that the system call reaching it fails with EIO, and succeeds once cleared.
func TestErrnoPerOp(t *testing.T) {
	backing := t.TempDir()
	fsys := faultfs.Mount(t, backing)
	mnt := fsys.Dir()
	p := func(name string) string { return filepath.Join(mnt, name) }
	writeFile(t, filepath.Join(backing, "f"), []byte("hello"))
	if err := os.Mkdir(filepath.Join(backing, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	// open keeps one descriptor per case, opened before the fault.
	open := func(t *testing.T, name string, flag int) *os.File {
		fh, err := os.OpenFile(p(name), flag, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { fh.Close() })
		return fh
	}
	cases := []struct {
		op  faultfs.Op
		run func(t *testing.T) error
	}{
		{faultfs.OpStat, func(t *testing.T) error { _, err := os.Stat(p("f")); return err }},
		{faultfs.OpOpen, func(t *testing.T) error { _, err := os.ReadFile(p("f")); return err }},
		{faultfs.OpCreate, func(t *testing.T) error {
			err := os.WriteFile(p("new"), nil, 0o644)
			os.Remove(p("new"))
			return err
		}},
		{faultfs.OpRead, func(t *testing.T) error {
			fh := open(t, "f", os.O_RDONLY)
			_, err := fh.ReadAt(make([]byte, 5), 0)
			return err
		}},
		{faultfs.OpWrite, func(t *testing.T) error {
			_, err := open(t, "f", os.O_WRONLY).WriteAt([]byte("HELLO"), 0)
			return err
		}},
		{faultfs.OpAllocate, func(t *testing.T) error {
			return unix.Fallocate(int(open(t, "f", os.O_WRONLY).Fd()), 0, 0, 4096)
		}},
		{faultfs.OpFlush, func(t *testing.T) error {
			fh, err := os.Open(p("f"))
			if err != nil {
				t.Fatal(err)
			}
			return fh.Close()
		}},
		{faultfs.OpFsync, func(t *testing.T) error { return open(t, "f", os.O_WRONLY).Sync() }},
		{faultfs.OpFsync, func(t *testing.T) error { return open(t, "d", os.O_RDONLY).Sync() }},
		{faultfs.OpSetattr, func(t *testing.T) error { return os.Chmod(p("f"), 0o600) }},
		{faultfs.OpRename, func(t *testing.T) error {
			err := os.Rename(p("f"), p("g"))
			os.Rename(p("g"), p("f"))
			return err
		}},
		{faultfs.OpUnlink, func(t *testing.T) error {
			writeFile(t, p("tmp"), nil)
			return os.Remove(p("tmp"))
		}},
		{faultfs.OpMkdir, func(t *testing.T) error {
			err := os.Mkdir(p("e"), 0o755)
			os.Remove(p("e"))
			return err
		}},
		{faultfs.OpRmdir, func(t *testing.T) error {
			if err := os.Mkdir(p("e"), 0o755); err != nil && !errors.Is(err, os.ErrExist) {
				t.Fatal(err)
			}
			return os.Remove(p("e"))
		}},
		{faultfs.OpLink, func(t *testing.T) error {
			err := os.Link(p("f"), p("l"))
			os.Remove(p("l"))
			return err
		}},
		{faultfs.OpReaddir, func(t *testing.T) error { _, err := os.ReadDir(p("d")); return err }},
		{faultfs.OpGetxattr, func(t *testing.T) error {
			_, err := unix.Getxattr(p("f"), "user.x", make([]byte, 8))
			if errors.Is(err, unix.ENODATA) {
				return nil
			}
			return err
		}},
		{faultfs.OpSetxattr, func(t *testing.T) error { return unix.Setxattr(p("f"), "user.x", []byte("1"), 0) }},
		{faultfs.OpStatfs, func(t *testing.T) error { var s unix.Statfs_t; return unix.Statfs(mnt, &s) }},
	}
	for _, c := range cases {
		t.Run(c.op.String(), func(t *testing.T) {
			if err := c.run(t); err != nil {
				t.Fatalf("without a fault: %v", err)
			}
			calls := fsys.Calls(c.op)
			fsys.Inject(faultfs.Fault{Op: c.op, Errno: syscall.EIO})
			err := c.run(t)
			fsys.Clear()
			if !errors.Is(err, syscall.EIO) {
				t.Fatalf("with %v: %v, want EIO", faultfs.Fault{Op: c.op, Errno: syscall.EIO}, err)
			}
			if fsys.Calls(c.op) <= calls {
				t.Errorf("Calls(%v) did not grow", c.op)
			}
			if err := c.run(t); err != nil {
				t.Fatalf("after Clear: %v", err)
			}
		})
	}
}

// TestWriteErrors checks what a writer sees: ENOSPC from creat(2), and
// EIO or ENOSPC from write(2) and fsync(2) on a descriptor opened before the
// fault, with nothing written behind the error.
func TestWriteErrors(t *testing.T) {
	backing := t.TempDir()
	fsys := faultfs.Mount(t, backing)
	name := filepath.Join(fsys.Dir(), "blk")

	fsys.Inject(faultfs.Fault{Op: faultfs.OpCreate, Errno: syscall.ENOSPC})
	if _, err := os.Create(name); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("create = %v, want ENOSPC", err)
	}
	fsys.Clear()

	fh, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	if _, err := fh.Write([]byte("head")); err != nil {
		t.Fatal(err)
	}
	fsys.Inject(faultfs.Fault{Op: faultfs.OpWrite, Errno: syscall.ENOSPC})
	if _, err := fh.Write(make([]byte, 1<<20)); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("write = %v, want ENOSPC", err)
	}
	fsys.Clear()
	fsys.Inject(faultfs.Fault{Op: faultfs.OpWrite, Errno: syscall.EIO})
	if _, err := fh.Write([]byte("tail")); !errors.Is(err, syscall.EIO) {
		t.Fatalf("write = %v, want EIO", err)
	}
	fsys.Clear()
	fsys.Inject(faultfs.Fault{Op: faultfs.OpFsync, Errno: syscall.EIO})
	if err := fh.Sync(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("fsync = %v, want EIO", err)
	}
	fsys.Clear()
	if err := fh.Sync(); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(backing, "blk")); string(got) != "head" {
		t.Fatalf("backing file holds %q, want only the write before the faults", got)
	}
}

func TestPathContains(t *testing.T) {
	fsys := faultfs.Mount(t, t.TempDir())
	mnt := fsys.Dir()
	if err := os.MkdirAll(filepath.Join(mnt, "m", "ab"), 0o755); err != nil {
		t.Fatal(err)
	}
	fsys.Inject(faultfs.Fault{Op: faultfs.OpCreate, Errno: syscall.EIO, PathContains: "m/ab/bad"})
	fsys.Inject(faultfs.Fault{Op: faultfs.OpRename, Errno: syscall.EROFS, PathContains: ".bin"})

	if _, err := os.Create(filepath.Join(mnt, "m", "ab", "bad.tmp")); !errors.Is(err, syscall.EIO) {
		t.Fatalf("create of a matching path = %v, want EIO", err)
	}
	good := filepath.Join(mnt, "m", "ab", "good.tmp")
	writeFile(t, good, []byte("ok"))
	// The rename rule matches on the target name alone.
	if err := os.Rename(good, filepath.Join(mnt, "m", "ab", "good.bin")); !errors.Is(err, syscall.EROFS) {
		t.Fatalf("rename to a matching name = %v, want EROFS", err)
	}
	if err := os.Rename(good, filepath.Join(mnt, "m", "ab", "good.dat")); err != nil {
		t.Fatalf("rename to another name: %v", err)
	}
}

// stalled runs fn in a goroutine, waits until the filesystem holds one
// operation in a stall, and checks fn has not returned. It returns fn's
// result channel.
func stalled(t *testing.T, fsys *faultfs.FS, fn func() error) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- fn() }()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	if err := fsys.WaitStalled(ctx, 1); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		t.Fatalf("stalled call returned %v", err)
	default:
	}
	return done
}

func result(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(patience):
		t.Fatal("stalled call was not released")
		return nil
	}
}

func TestStallReleasedByClear(t *testing.T) {
	fsys := faultfs.Mount(t, t.TempDir())
	name := filepath.Join(fsys.Dir(), "slow")
	writeFile(t, name, []byte("x"))

	fsys.Inject(faultfs.Fault{Op: faultfs.OpStat, Stall: true, PathContains: "slow"})
	done := stalled(t, fsys, func() error { _, err := os.Stat(name); return err })
	// Other paths are not held up.
	if err := os.WriteFile(filepath.Join(fsys.Dir(), "fast"), []byte("y"), 0o644); err != nil {
		t.Fatal(err)
	}
	fsys.Clear()
	if err := result(t, done); err != nil {
		t.Fatalf("released stat: %v", err)
	}
	if n := fsys.Stalled(); n != 0 {
		t.Fatalf("Stalled() = %d after release", n)
	}

	// A stall with an errno fails once released.
	fh, err := os.OpenFile(name, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	fsys.Inject(faultfs.Fault{Op: faultfs.OpFsync, Stall: true, Errno: syscall.EIO})
	done = stalled(t, fsys, fh.Sync)
	fsys.Clear()
	if err := result(t, done); !errors.Is(err, syscall.EIO) {
		t.Fatalf("released fsync = %v, want EIO", err)
	}
}

func TestUnmountReleasesStall(t *testing.T) {
	fsys := faultfs.Mount(t, t.TempDir())
	mnt := fsys.Dir()
	fsys.Inject(faultfs.Fault{Op: faultfs.OpCreate, Stall: true})
	done := stalled(t, fsys, func() error {
		return os.WriteFile(filepath.Join(mnt, "blk"), []byte("x"), 0o644)
	})
	if err := fsys.Unmount(); err != nil {
		t.Fatal(err)
	}
	result(t, done) // returns; whether it succeeded depends on the unmount race
	if slices.Contains(mountpoints(t), mnt) {
		t.Fatalf("%s still mounted", mnt)
	}
}

// TestDelay: a delayed operation completes after the delay, or fails
// with the rule's errno after it (a slow network filesystem).
func TestDelay(t *testing.T) {
	fsys := faultfs.Mount(t, t.TempDir())
	p := filepath.Join(fsys.Dir(), "f")
	writeFile(t, p, []byte("data"))
	fsys.Inject(faultfs.Fault{Op: faultfs.OpStat, Delay: 50 * time.Millisecond, PathContains: "f"})
	start := time.Now()
	if _, err := os.Stat(p); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Fatalf("stat took %v, want at least the 50ms delay", d)
	}
	fsys.Clear()
	fsys.Inject(faultfs.Fault{Op: faultfs.OpOpen, Delay: 10 * time.Millisecond, Errno: syscall.ESTALE})
	if _, err := os.Open(p); !errors.Is(err, syscall.ESTALE) {
		t.Fatalf("open after a delay = %v, want ESTALE", err)
	}
}

// TestDelayCombines: a delay for every operation, injected first, adds
// to the fault injected after it instead of hiding it.
func TestDelayCombines(t *testing.T) {
	fsys := faultfs.Mount(t, t.TempDir())
	p := filepath.Join(fsys.Dir(), "f")
	writeFile(t, p, []byte("data"))
	fsys.Inject(faultfs.Fault{Op: faultfs.OpAny, Delay: 20 * time.Millisecond})
	fsys.Inject(faultfs.Fault{Op: faultfs.OpOpen, Errno: syscall.EIO, PathContains: "f"})
	start := time.Now()
	if _, err := os.Open(p); !errors.Is(err, syscall.EIO) {
		t.Fatalf("open = %v, want EIO", err)
	}
	if d := time.Since(start); d < 20*time.Millisecond {
		t.Fatalf("open failed after %v, want the delay first", d)
	}
}

// TestTimes: a rule with Times applies to that many operations, then
// lapses; the rules after it apply again.
func TestTimes(t *testing.T) {
	fsys := faultfs.Mount(t, t.TempDir())
	p := filepath.Join(fsys.Dir(), "f")
	writeFile(t, p, []byte("data"))
	fsys.Inject(faultfs.Fault{Op: faultfs.OpSetattr, Errno: syscall.EIO, Times: 2})
	fsys.Inject(faultfs.Fault{Op: faultfs.OpSetattr, Errno: syscall.EPERM, Times: 1})
	for i, want := range []error{syscall.EIO, syscall.EIO, syscall.EPERM, nil, nil} {
		if err := unix.Truncate(p, 2); !errors.Is(err, want) {
			t.Fatalf("truncate %d = %v, want %v", i, err, want)
		}
	}
	defer func() {
		if recover() == nil {
			t.Fatal("a negative Times was taken")
		}
	}()
	fsys.Inject(faultfs.Fault{Op: faultfs.OpSetattr, Errno: syscall.EIO, Times: -1})
}
