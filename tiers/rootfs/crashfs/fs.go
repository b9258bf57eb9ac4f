package crashfs

import (
	"fmt"
	"os"
	"sync/atomic"

	"github.com/ucmfs/ucmfs/tiers/rootfs"
	"golang.org/x/sys/unix"
)

// FS is a rootfs.FS on a Disk: the real rooted operations, each after
// the Disk's fault hook (hooked, wrap.go), and the syncs recorded as
// durable.
type FS struct {
	hooked
	root   *rootfs.Root
	d      *Disk
	closed atomic.Bool
}

var _ rootfs.FS = (*FS)(nil)

// newFS is the filesystem of d over the Root r.
func newFS(d *Disk, r *rootfs.Root) *FS {
	f := &FS{root: r, d: d}
	f.hooked = hooked{FS: r, before: f.before, guard: f.guard}
	return f
}

// Canonical is the Root's: the directory it holds.
func (f *FS) Canonical() string { return f.root.Canonical() }

// SyncFile fsyncs file and records its bytes, mode, times and xattrs as
// durable.
func (f *FS) SyncFile(file *os.File) error {
	return f.do("fsync", file.Name(), func() error {
		if err := file.Sync(); err != nil {
			return err
		}
		return f.d.syncFile(file)
	})
}

// SyncDir fsyncs the directory rel and records its entries as durable.
func (f *FS) SyncDir(rel string) error {
	return f.do("fsync directory", rel, func() error {
		if err := f.root.SyncDir(rel); err != nil {
			return err
		}
		return f.d.syncDir(f.root, rel)
	})
}

// Syncfs syncs the filesystem and records the whole directory durable.
func (f *FS) Syncfs() error {
	return f.do("syncfs", ".", func() error {
		if err := f.root.Syncfs(); err != nil {
			return err
		}
		return f.d.syncAll()
	})
}

// guard runs fn, after the fault hook, under the Disk's read lock, so a
// power cut waits for the operation (its sync recorded or not) to end;
// a rename also waits for a sync's listing of a directory (Disk.names).
func (f *FS) guard(op, rel string, fn func() error) error {
	f.d.ops.RLock()
	defer f.d.ops.RUnlock()
	if op == "rename" {
		f.d.names.RLock()
		defer f.d.names.RUnlock()
	}
	if f.d.cut.Load() {
		return &os.PathError{Op: op, Path: f.Path(rel), Err: unix.EIO}
	}
	return fn()
}

// Close closes the filesystem. An operation on it after that is
// recorded (Disk.Late lists it) and fails as the closed Root fails it
// (EBADF).
func (f *FS) Close() error {
	f.closed.Store(true)
	return f.root.Close()
}

// before is Disk.before, for an operation on a filesystem not closed.
func (f *FS) before(op, rel string) error {
	if f.closed.Load() {
		f.d.late(fmt.Sprintf("%s %s", op, rel))
		return nil
	}
	return f.d.before(op, rel)
}
