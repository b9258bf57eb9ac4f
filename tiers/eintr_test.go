package tiers

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/ucmfs/ucmfs/internal/faultfs"
)

// TestInterruptedCallsRetried: a tier directory on a FUSE filesystem
// (3FS's client) answers EINTR when a signal interrupts a request, and
// the Go runtime signals its threads to preempt goroutines; made again,
// the call succeeds. A call of each kind interrupted twice fails no
// write-back, no read, and drops no file from a shared tier's index.
//
// It stays on a FUSE mount (faultfs), not on crashfs: the retries live in
// the real system calls (rootfs's and the descriptors'), so the EINTR has
// to come from the kernel, as 3FS's client returns it.
func TestInterruptedCallsRetried(t *testing.T) {
	s, ffs, _ := fuseStackOn(t, StackConfig{RetryDelay: time.Hour},
		MemConfig{Capacity: 8 << 20}, DirConfig{Kind: "nfs", OpTimeout: 10 * time.Second, Revalidate: -1})
	d := dirTier(s, 0)
	ctx := context.Background()
	writes := []faultfs.Op{faultfs.OpStat, faultfs.OpCreate, faultfs.OpMkdir, faultfs.OpSetxattr,
		faultfs.OpRename, faultfs.OpSetattr, faultfs.OpFsync}
	for i, op := range writes {
		k, data := testBlock("m", i, 64<<10)
		if _, err := s.Put(k, data, false); err != nil {
			t.Fatal(err)
		}
		before := ffs.Calls(op)
		ffs.Inject(faultfs.Fault{Op: op, Errno: syscall.EINTR, Times: 2})
		if err := s.Flush(ctx, k); err != nil {
			t.Errorf("write-back with %s interrupted twice: %v", op, err)
		}
		ffs.Clear()
		if ffs.Calls(op) == before {
			t.Errorf("the write-back made no %s call: the test tests nothing there", op)
		}
	}
	for i, op := range []faultfs.Op{faultfs.OpStat, faultfs.OpOpen, faultfs.OpGetxattr, faultfs.OpRead} {
		k, data := testBlock("m", i, 64<<10)
		if err := s.mem.Remove(k); err != nil { // served from the shared tier
			t.Fatal(err)
		}
		ffs.Inject(faultfs.Fault{Op: op, Errno: syscall.EINTR, Times: 2})
		mustEqual(t, "read with "+op.String()+" interrupted twice", readAll(t, s, k), data)
		ffs.Clear()
	}
	// A listing of a shard whose stat of one file is interrupted keeps
	// that file.
	k, _ := testBlock("m", 0, 64<<10)
	ffs.Inject(faultfs.Fault{Op: faultfs.OpStat, Errno: syscall.EINTR, PathContains: k.ID.String(), Times: 2})
	d.ListShard(k)
	ffs.Clear()
	if !d.Index().Has(k) {
		t.Fatal("a listing whose stat of a file was interrupted dropped the file from the index")
	}
}
