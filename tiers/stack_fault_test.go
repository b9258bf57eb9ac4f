package tiers

import (
	"context"
	"errors"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/internal/faultfs"
	"github.com/ucmfs/ucmfs/tiers/rootfs/crashfs"
	"github.com/ucmfs/ucmfs/tiers/tier"
)

// faultStack is a stack whose directory tier (nfs kind, 500 ms operation
// timeout) stands on a real directory behind a fault hook.
func faultStack(t *testing.T, memCap int64, cfg StackConfig) (*Stack, *crashfs.Faults, string) {
	t.Helper()
	cfg.RetryDelay = 50 * time.Millisecond
	return faultStackOn(t, cfg, MemConfig{Capacity: memCap}, DirConfig{Kind: "nfs", OpTimeout: 500 * time.Millisecond})
}

// faultStackOn is a stack of cfg, mc and one directory tier dc on a real
// directory (returned) whose every operation passes a crashfs.Faults
// hook; the fault is cleared before the stack closes.
func faultStackOn(t *testing.T, cfg StackConfig, mc MemConfig, dc DirConfig) (*Stack, *crashfs.Faults, string) {
	t.Helper()
	f := crashfs.NewFaults()
	dc.Dir, dc.OpenFS = t.TempDir(), crashfs.OpenWrapped(f.Before)
	s := buildStack(t, cfg, mc, dc)
	t.Cleanup(f.Clear) // before the stack's Close, which waits for a stalled operation
	return s, f, dc.Dir
}

// fuseStackOn is faultStackOn's stack with the tier on a fault-injecting
// FUSE mount of a real directory (returned with the mount), for a fault
// only a real filesystem under the tier's descriptors makes: a write(2)
// that fails, a system call interrupted.
func fuseStackOn(t *testing.T, cfg StackConfig, mc MemConfig, dc DirConfig) (*Stack, *faultfs.FS, string) {
	t.Helper()
	backing := t.TempDir()
	ffs := faultfs.Mount(t, backing)
	dc.Dir = ffs.Dir()
	s := buildStack(t, cfg, mc, dc)
	t.Cleanup(ffs.Clear)
	return s, ffs, backing
}

// fuseStack is faultStack's stack on fuseStackOn's mount.
func fuseStack(t *testing.T, memCap int64) (*Stack, *faultfs.FS, string) {
	t.Helper()
	return fuseStackOn(t, StackConfig{RetryDelay: 50 * time.Millisecond}, MemConfig{Capacity: memCap},
		DirConfig{Kind: "nfs", OpTimeout: 500 * time.Millisecond})
}

// creates matches the operations that create a file on a tier (what a
// full filesystem refuses): the open of a temp file (a writer's, a
// model record's, O_CREAT|O_EXCL) and CreateTemp (the probe's, a sum's).
func creates(op, rel string) bool {
	return op == "create" || op == "open" && strings.Contains(path.Base(rel), tier.TmpPrefix)
}

// TestStackFaultEIO: a directory whose writes fail with EIO. The fault is
// a write(2) of a block's bytes, on the tier's own descriptor, which no
// rootfs hook sees: a real filesystem under the descriptor makes it
// (faultfs).
func TestStackFaultEIO(t *testing.T) {
	s, ffs, backing := fuseStack(t, 8<<20)
	a, da := testBlock("f", 1, 100<<10)
	if _, err := s.Put(a, da, true); err != nil {
		t.Fatal(err)
	}
	ffs.Inject(faultfs.Fault{Op: faultfs.OpWrite, Errno: syscall.EIO})
	b, db := testBlock("f", 2, 100<<10)
	if _, err := s.Put(b, db, false); err != nil {
		t.Fatalf("put with a failing directory below: %v", err)
	}
	if err := s.Flush(context.Background(), b); !errors.Is(err, syscall.EIO) {
		t.Fatalf("flush onto a directory returning EIO: %v, want EIO", err)
	}
	if ffs.Calls(faultfs.OpWrite) == 0 {
		t.Fatal("the fault was never hit")
	}
	if bi, _ := s.Stat(b); !bi.Dirty {
		t.Fatalf("block not durable yet must stay dirty: %+v", bi)
	}
	mustEqual(t, "dirty block during EIO", readAll(t, s, b), db)
	mustEqual(t, "clean block during EIO", readAll(t, s, a), da)
	// A write that failed with EIO took the tier Down at once; its probe
	// brings it back once it takes writes again.
	if h := s.dirs[0].Health(); h != Down {
		t.Fatalf("tier %v after a write failed with EIO, want down", h)
	}
	ffs.Clear()
	for deadline := time.Now().Add(10 * time.Second); s.dirs[0].Health() == Down; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the probe did not bring the tier back")
		}
	}
	if err := s.Flush(context.Background(), b); err != nil {
		t.Fatalf("flush after the fault cleared: %v", err)
	}
	got, err := os.ReadFile(filepath.Join(backing, b.Path()))
	if err != nil {
		t.Fatal(err)
	}
	mustEqual(t, "backing file", got, db)
}

func TestStackFaultENOSPC(t *testing.T) {
	s, f, _ := faultStack(t, 1<<20, StackConfig{RoomWait: 200 * time.Millisecond})
	f.Set(crashfs.Fault{Match: creates, Errno: syscall.ENOSPC})
	var keys []format.Key
	var datas [][]byte
	var err error
	for i := 0; i < 4 && err == nil; i++ { // 4 × 300 KiB into 1 MiB
		k, d := testBlock("f", i, 300<<10)
		if _, err = s.Put(k, d, false); err == nil {
			keys, datas = append(keys, k), append(datas, d)
		}
	}
	if !errors.Is(err, ErrNoSpace) {
		t.Fatalf("memory full of dirty blocks over a full directory: %v, want ErrNoSpace", err)
	}
	for i, k := range keys {
		mustEqual(t, "dirty block while full", readAll(t, s, k), datas[i])
	}
	if f.Hits() == 0 {
		t.Fatal("the fault was never hit")
	}
	f.Clear()
	if err := s.FlushAll(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	k, d := testBlock("f", 9, 300<<10)
	if _, err := s.Put(k, d, false); err != nil {
		t.Fatalf("put after space came back: %v", err)
	}
}

func TestStackFaultStall(t *testing.T) {
	s, f, _ := faultStack(t, 8<<20, StackConfig{})
	a, da := testBlock("f", 1, 100<<10)
	if _, err := s.Put(a, da, true); err != nil {
		t.Fatal(err)
	}
	f.Set(crashfs.Fault{Stall: true})
	b, db := testBlock("f", 2, 100<<10)
	if _, err := s.Put(b, db, false); err != nil {
		t.Fatalf("put over a stalled directory: %v", err)
	}
	if err := s.Flush(context.Background(), b); !errors.Is(err, ErrStalled) {
		t.Fatalf("flush onto a stalled directory: %v, want ErrStalled", err)
	}
	mustEqual(t, "memory block during stall", readAll(t, s, b), db)
	mustEqual(t, "cached block during stall", readAll(t, s, a), da)
	f.Clear()
	deadline := time.Now().Add(10 * time.Second)
	for s.dirs[0].Health() != Up && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	// The operations released from the stall finish in the background; on
	// a loaded machine one may still pass the 500 ms operation timeout
	// once the tier is Up again, which is a stall like any other. The
	// flush must succeed once they are done: it is tried until the bound.
	for {
		err := s.Flush(context.Background(), b)
		if err == nil {
			break
		}
		if !errors.Is(err, ErrStalled) || time.Now().After(deadline) {
			t.Fatalf("flush after the stall ended: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestStackFlushAfterFaultCleared: a flush asked after a fault cleared
// answers from an attempt of its own, not with the failure of a
// write-back it found under way that met the fault (the cause of
// TestStackFaultENOSPC's flakes: the pool's write-back had failed its
// create and its retry when the fault was cleared, and FlushAll, asked
// a moment later, was handed that ENOSPC). Each create here fails with
// ENOSPC after a delay, so the background write-back is still in its
// retry's create when the flush is asked.
func TestStackFlushAfterFaultCleared(t *testing.T) {
	// The creates are slowed so that the flush joins an attempt in flight;
	// the operation timeout is far above the delay, so that a loaded
	// machine does not turn the delay into a stall (the tier then goes
	// Down, and the flush's own attempt is refused for that instead).
	s, f, _ := faultStackOn(t, StackConfig{RetryDelay: 50 * time.Millisecond}, MemConfig{Capacity: 8 << 20},
		DirConfig{Kind: "nfs", OpTimeout: 30 * time.Second})
	f.Set(crashfs.Fault{Match: creates, Errno: syscall.ENOSPC, Delay: 250 * time.Millisecond})
	k, d := testBlock("f", 1, 100<<10)
	if _, err := s.Put(k, d, false); err != nil {
		t.Fatal(err)
	}
	go s.writeBack(k, false) // the pool's write-back of the block
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for f.Hits() < 2 { // the first create failed; the retry's create is matched
		if ctx.Err() != nil {
			t.Fatal("the write-back never retried its create")
		}
		runtime.Gosched()
	}
	f.Clear()
	if err := s.FlushAll(context.Background(), ""); err != nil {
		t.Fatalf("flush asked after the fault was cleared: %v, want nil", err)
	}
	if bi, err := s.Stat(k); err != nil || bi.Dirty {
		t.Fatalf("after the flush: %+v, %v; want clean", bi, err)
	}
}

// fsyncsOf counts, from now, the fsyncs that pass f: the files' and the
// directories' apart (a directory made for a shard fsyncs its parent, so
// counting both together is met with no file fsynced).
func fsyncsOf(f *crashfs.Faults) func() (files, dirs int64) {
	files, dirs := f.Calls("fsync"), f.Calls("fsync directory")
	return func() (int64, int64) { return f.Calls("fsync") - files, f.Calls("fsync directory") - dirs }
}

// TestWriteThroughFsyncs: with WriteThrough, a publish returns once the
// block is durable on an nvme tier (which fsyncs no commit by itself): the
// file and its directory are fsynced before Publish returns.
func TestWriteThroughFsyncs(t *testing.T) {
	s, f, _ := faultStackOn(t, StackConfig{WriteThrough: true}, MemConfig{Capacity: 8 << 20}, DirConfig{Kind: "nvme"})
	k, data := testBlock("m", 1, 4096)
	since := fsyncsOf(f)
	if _, err := s.Put(k, data, false); err != nil {
		t.Fatal(err)
	}
	if files, dirs := since(); files < 1 || dirs < 1 {
		t.Errorf("a write-through publish fsynced %d files and %d directories, want the file and its directory", files, dirs)
	}
}

// TestDurablePathsFsync: on an nvme tier (no fsync per commit), a durable
// publish (a writer's fsync) and a flush of dirty blocks each fsync what
// they make durable; a background write-back does not.
func TestDurablePathsFsync(t *testing.T) {
	s, f, _ := faultStackOn(t, StackConfig{DirtyExpire: time.Hour}, MemConfig{Capacity: 8 << 20}, DirConfig{Kind: "nvme"})
	fsyncs := func(what string, fn func() error, atLeast int64) {
		t.Helper()
		since := fsyncsOf(f)
		if err := fn(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if files, _ := since(); files < atLeast {
			t.Errorf("%s fsynced %d files, want at least %d", what, files, atLeast)
		}
	}
	k1, d1 := testBlock("m", 1, 4096)
	fsyncs("a durable publish", func() error { _, err := s.Put(k1, d1, true); return err }, 1)
	k2, d2 := testBlock("m", 2, 4096)
	k3, d3 := testBlock("m", 3, 4096)
	for _, kd := range []struct {
		k format.Key
		d []byte
	}{{k2, d2}, {k3, d3}} {
		if _, err := s.Put(kd.k, kd.d, false); err != nil { // dirty for an hour
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	fsyncs("a flush of two dirty blocks", func() error { return s.FlushAll(ctx, "m") }, 2)
	// A clean stop writes back what is still dirty, durably.
	k4, d4 := testBlock("m", 4, 4096)
	if _, err := s.Put(k4, d4, false); err != nil {
		t.Fatal(err)
	}
	fsyncs("a clean stop with a dirty block", func() error { return s.Close(ctx) }, 1)
}

// TestFileLargerThanEveryTier: a block larger than the only directory
// tier's capacity is refused at publish with ErrNoSpace (it could never
// be written back), and a block that fits is taken.
func TestFileLargerThanEveryTier(t *testing.T) {
	s := buildStack(t, StackConfig{}, MemConfig{Capacity: 8 << 20}, DirConfig{Kind: "nvme", Dir: t.TempDir(), Capacity: 1 << 20})
	big, bigData := testBlock("m", 1, 2<<20)
	if _, err := s.Put(big, bigData, false); !errors.Is(err, ErrNoSpace) {
		t.Errorf("a block larger than every tier: %v, want ErrNoSpace", err)
	}
	if s.Has(big) {
		t.Error("the refused block is published")
	}
	small, smallData := testBlock("m", 2, 64<<10)
	if _, err := s.Put(small, smallData, true); err != nil {
		t.Errorf("a block that fits: %v", err)
	}
}

// TestFilesReplaceFailedKeepsOld: a new version of a File whose durable
// publish fails (the tier's write returns EIO) leaves the name as it was:
// the old version, read whole from the tier, as after a failed
// rename(2). The replace had taken the old version's file off the tier,
// so the name was gone.
//
// The fault is a write(2) of the bytes (faultfs), as in TestStackFaultEIO.
func TestFilesReplaceFailedKeepsOld(t *testing.T) {
	s, ffs, backing := fuseStack(t, 8<<20)
	k := format.FileKey("engine", "pages/p.bin")
	if err := replaceFile(s, k, []byte("version 1"), true); err != nil {
		t.Fatal(err)
	}
	ffs.Inject(faultfs.Fault{Op: faultfs.OpWrite, Errno: syscall.EIO})
	if err := replaceFile(s, k, []byte("version 2, not durable"), true); !errors.Is(err, syscall.EIO) {
		t.Fatalf("durable replace onto a tier returning EIO: %v, want EIO", err)
	}
	ffs.Clear()
	if got, err := os.ReadFile(filepath.Join(backing, k.Path())); err != nil || string(got) != "version 1" {
		t.Fatalf("the tier's file after the failed replace: %q, %v", got, err)
	}
	if !s.Has(k) {
		t.Fatal("the name is gone after the failed replace")
	}
	// The EIO took the tier down; its probe brings it back.
	var h *Handle
	var err error
	for deadline := time.Now().Add(20 * time.Second); ; {
		if h, err = s.Open(k); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("open after the failed replace: %v, want the old version", err)
	}
	defer h.File.Close()
	got := make([]byte, 64)
	n, _ := h.File.ReadAt(got, 0)
	if string(got[:n]) != "version 1" {
		t.Fatalf("read after the failed replace: %q, want the old version", got[:n])
	}
}
