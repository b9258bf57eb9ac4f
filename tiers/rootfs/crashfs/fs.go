package crashfs

import (
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/ucmfs/ucmfs/tiers/rootfs"
	"golang.org/x/sys/unix"
)

// FS is a rootfs.FS on a Disk: the real rooted operations, each after
// the Disk's fault hook, and the syncs recorded as durable.
type FS struct {
	*rootfs.Root
	d      *Disk
	closed atomic.Bool
}

var _ rootfs.FS = (*FS)(nil)

// OpenFile is Root.OpenFile after the fault hook.
func (f *FS) OpenFile(rel string, flag int, perm uint32) (*os.File, error) {
	if err := f.before("open", rel); err != nil {
		return nil, err
	}
	return f.Root.OpenFile(rel, flag, perm)
}

// OpenFD is Root.OpenFD after the fault hook.
func (f *FS) OpenFD(rel string, flag int, perm uint32) (int, error) {
	if err := f.before("open", rel); err != nil {
		return -1, err
	}
	return f.Root.OpenFD(rel, flag, perm)
}

// OpenRegular is Root.OpenRegular after the fault hook.
func (f *FS) OpenRegular(rel string) (*os.File, error) {
	if err := f.before("open", rel); err != nil {
		return nil, err
	}
	return f.Root.OpenRegular(rel)
}

// CreateTemp is Root.CreateTemp after the fault hook.
func (f *FS) CreateTemp(dir, prefix string, perm uint32) (*os.File, string, error) {
	if err := f.before("create", dir); err != nil {
		return nil, "", err
	}
	return f.Root.CreateTemp(dir, prefix, perm)
}

// ReadFile is Root.ReadFile after the fault hook.
func (f *FS) ReadFile(rel string) ([]byte, error) {
	if err := f.before("read", rel); err != nil {
		return nil, err
	}
	return f.Root.ReadFile(rel)
}

// WriteFile is Root.WriteFile after the fault hook.
func (f *FS) WriteFile(rel string, data []byte, perm uint32) error {
	return f.do("write", rel, func() error { return f.Root.WriteFile(rel, data, perm) })
}

// Lstat is Root.Lstat after the fault hook.
func (f *FS) Lstat(rel string, st *unix.Stat_t) error {
	return f.do("stat", rel, func() error { return f.Root.Lstat(rel, st) })
}

// Stat is Root.Stat after the fault hook.
func (f *FS) Stat(rel string, st *unix.Stat_t) error {
	return f.do("stat", rel, func() error { return f.Root.Stat(rel, st) })
}

// Statfs is Root.Statfs after the fault hook.
func (f *FS) Statfs(st *unix.Statfs_t) error {
	return f.do("statfs", ".", func() error { return f.Root.Statfs(st) })
}

// Getxattr is Root.Getxattr after the fault hook.
func (f *FS) Getxattr(rel, name string, buf []byte) (int, error) {
	if err := f.before("getxattr", rel); err != nil {
		return 0, err
	}
	return f.Root.Getxattr(rel, name, buf)
}

// Chtimes is Root.Chtimes after the fault hook.
func (f *FS) Chtimes(rel string, atime, mtime time.Time) error {
	return f.do("utimes", rel, func() error { return f.Root.Chtimes(rel, atime, mtime) })
}

// Mkdir is Root.Mkdir after the fault hook.
func (f *FS) Mkdir(rel string, perm uint32) error {
	return f.do("mkdir", rel, func() error { return f.Root.Mkdir(rel, perm) })
}

// MkdirAll is Root.MkdirAll after the fault hook.
func (f *FS) MkdirAll(rel string, perm uint32) error {
	return f.do("mkdir", rel, func() error { return f.Root.MkdirAll(rel, perm) })
}

// Unlink is Root.Unlink after the fault hook.
func (f *FS) Unlink(rel string) error {
	return f.do("unlink", rel, func() error { return f.Root.Unlink(rel) })
}

// Rmdir is Root.Rmdir after the fault hook.
func (f *FS) Rmdir(rel string) error {
	return f.do("rmdir", rel, func() error { return f.Root.Rmdir(rel) })
}

// RemoveAll is Root.RemoveAll after the fault hook.
func (f *FS) RemoveAll(rel string) error {
	return f.do("remove", rel, func() error { return f.Root.RemoveAll(rel) })
}

// Rename is Root.Rename after the fault hook.
func (f *FS) Rename(oldRel, newRel string, flags uint) error {
	return f.do("rename", newRel, func() error { return f.Root.Rename(oldRel, newRel, flags) })
}

// RenameOnce is Root.RenameOnce after the fault hook.
func (f *FS) RenameOnce(oldRel, newRel string, flags uint) error {
	return f.do("rename", newRel, func() error { return f.Root.RenameOnce(oldRel, newRel, flags) })
}

// Link is Root.Link after the fault hook.
func (f *FS) Link(oldRel, newRel string) error {
	return f.do("link", newRel, func() error { return f.Root.Link(oldRel, newRel) })
}

// LinkOnce is Root.LinkOnce after the fault hook.
func (f *FS) LinkOnce(oldRel, newRel string) error {
	return f.do("link", newRel, func() error { return f.Root.LinkOnce(oldRel, newRel) })
}

// ReadDir is Root.ReadDir after the fault hook.
func (f *FS) ReadDir(rel string) ([]rootfs.Entry, error) {
	if err := f.before("readdir", rel); err != nil {
		return nil, err
	}
	return f.Root.ReadDir(rel)
}

// ReadDirNames is Root.ReadDirNames after the fault hook.
func (f *FS) ReadDirNames(rel string) ([]string, error) {
	if err := f.before("readdir", rel); err != nil {
		return nil, err
	}
	return f.Root.ReadDirNames(rel)
}

// ReadDirAll is Root.ReadDirAll after the fault hook.
func (f *FS) ReadDirAll(rel string) ([]string, error) {
	if err := f.before("readdir", rel); err != nil {
		return nil, err
	}
	return f.Root.ReadDirAll(rel)
}

// ReadDirStat is Root.ReadDirStat after the fault hook.
func (f *FS) ReadDirStat(rel string) ([]rootfs.Stat, error) {
	if err := f.before("readdir", rel); err != nil {
		return nil, err
	}
	return f.Root.ReadDirStat(rel)
}

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
		if err := f.Root.SyncDir(rel); err != nil {
			return err
		}
		return f.d.syncDir(f.Root, rel)
	})
}

// Syncfs syncs the filesystem and records the whole directory durable.
func (f *FS) Syncfs() error {
	return f.do("syncfs", ".", func() error {
		if err := f.Root.Syncfs(); err != nil {
			return err
		}
		return f.d.syncAll()
	})
}

// do runs fn after the fault hook, under the Disk's read lock, so a
// power cut waits for the operation (its sync recorded or not) to end.
func (f *FS) do(op, rel string, fn func() error) error {
	if err := f.before(op, rel); err != nil {
		return err
	}
	f.d.ops.RLock()
	defer f.d.ops.RUnlock()
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
	return f.Root.Close()
}

// before is Disk.before, for an operation on a filesystem not closed.
func (f *FS) before(op, rel string) error {
	if f.closed.Load() {
		f.d.late(fmt.Sprintf("%s %s", op, rel))
		return nil
	}
	return f.d.before(op, rel)
}
