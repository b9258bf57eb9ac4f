package crashfs

import (
	"os"
	"time"

	"github.com/ucmfs/ucmfs/tiers/rootfs"
	"golang.org/x/sys/unix"
)

// Wrap returns fs with before run ahead of each of its operations, with
// the operation's name ("open", "create", "stat", "rename", "fsync", ...:
// those of Disk.SetFault) and path: an error it returns is the
// operation's, and nothing is done; it may block (a stall), or do
// something else first (another operation of the tier it stands under:
// what happens between two of a tier's operations). It is how a test
// puts a tier on a filesystem that fails or waits at a chosen operation
// without a Disk: the memory tier's private directory (mem.Config.WrapFS),
// a directory tier's Root (dir.Config.OpenFS).
func Wrap(fs rootfs.FS, before func(op, rel string) error) rootfs.FS {
	return &hooked{FS: fs, before: before}
}

// hooked is fs with a function run ahead of each operation: Wrap's, and
// the base of a Disk's filesystems (FS).
type hooked struct {
	rootfs.FS
	before func(op, rel string) error
	// guard runs the operations that change the directory or sync it,
	// after before (nil: as they are): a Disk holds its power cut off
	// while one runs.
	guard func(op, rel string, fn func() error) error
}

// do runs fn after before, through guard.
func (h *hooked) do(op, rel string, fn func() error) error {
	if err := h.before(op, rel); err != nil {
		return err
	}
	if h.guard == nil {
		return fn()
	}
	return h.guard(op, rel, fn)
}

// OpenFile is the inner OpenFile after the hook.
func (h *hooked) OpenFile(rel string, flag int, perm uint32) (*os.File, error) {
	if err := h.before("open", rel); err != nil {
		return nil, err
	}
	return h.FS.OpenFile(rel, flag, perm)
}

// OpenFD is the inner OpenFD after the hook.
func (h *hooked) OpenFD(rel string, flag int, perm uint32) (int, error) {
	if err := h.before("open", rel); err != nil {
		return -1, err
	}
	return h.FS.OpenFD(rel, flag, perm)
}

// OpenRegular is the inner OpenRegular after the hook.
func (h *hooked) OpenRegular(rel string) (*os.File, error) {
	if err := h.before("open", rel); err != nil {
		return nil, err
	}
	return h.FS.OpenRegular(rel)
}

// CreateTemp is the inner CreateTemp after the hook.
func (h *hooked) CreateTemp(dir, prefix string, perm uint32) (*os.File, string, error) {
	if err := h.before("create", dir); err != nil {
		return nil, "", err
	}
	return h.FS.CreateTemp(dir, prefix, perm)
}

// ReadFile is the inner ReadFile after the hook.
func (h *hooked) ReadFile(rel string) ([]byte, error) {
	if err := h.before("read", rel); err != nil {
		return nil, err
	}
	return h.FS.ReadFile(rel)
}

// WriteFile is the inner WriteFile after the hook.
func (h *hooked) WriteFile(rel string, data []byte, perm uint32) error {
	return h.do("write", rel, func() error { return h.FS.WriteFile(rel, data, perm) })
}

// Lstat is the inner Lstat after the hook.
func (h *hooked) Lstat(rel string, st *unix.Stat_t) error {
	return h.do("stat", rel, func() error { return h.FS.Lstat(rel, st) })
}

// Stat is the inner Stat after the hook.
func (h *hooked) Stat(rel string, st *unix.Stat_t) error {
	return h.do("stat", rel, func() error { return h.FS.Stat(rel, st) })
}

// Statfs is the inner Statfs after the hook.
func (h *hooked) Statfs(st *unix.Statfs_t) error {
	return h.do("statfs", ".", func() error { return h.FS.Statfs(st) })
}

// Getxattr is the inner Getxattr after the hook.
func (h *hooked) Getxattr(rel, name string, buf []byte) (int, error) {
	if err := h.before("getxattr", rel); err != nil {
		return 0, err
	}
	return h.FS.Getxattr(rel, name, buf)
}

// Chtimes is the inner Chtimes after the hook.
func (h *hooked) Chtimes(rel string, atime, mtime time.Time) error {
	return h.do("utimes", rel, func() error { return h.FS.Chtimes(rel, atime, mtime) })
}

// Mkdir is the inner Mkdir after the hook.
func (h *hooked) Mkdir(rel string, perm uint32) error {
	return h.do("mkdir", rel, func() error { return h.FS.Mkdir(rel, perm) })
}

// MkdirAll is the inner MkdirAll after the hook.
func (h *hooked) MkdirAll(rel string, perm uint32) error {
	return h.do("mkdir", rel, func() error { return h.FS.MkdirAll(rel, perm) })
}

// Unlink is the inner Unlink after the hook.
func (h *hooked) Unlink(rel string) error {
	return h.do("unlink", rel, func() error { return h.FS.Unlink(rel) })
}

// Rmdir is the inner Rmdir after the hook.
func (h *hooked) Rmdir(rel string) error {
	return h.do("rmdir", rel, func() error { return h.FS.Rmdir(rel) })
}

// RemoveAll is the inner RemoveAll after the hook.
func (h *hooked) RemoveAll(rel string) error {
	return h.do("remove", rel, func() error { return h.FS.RemoveAll(rel) })
}

// Rename is the inner Rename after the hook.
func (h *hooked) Rename(oldRel, newRel string, flags uint) error {
	return h.do("rename", newRel, func() error { return h.FS.Rename(oldRel, newRel, flags) })
}

// RenameOnce is the inner RenameOnce after the hook.
func (h *hooked) RenameOnce(oldRel, newRel string, flags uint) error {
	return h.do("rename", newRel, func() error { return h.FS.RenameOnce(oldRel, newRel, flags) })
}

// Link is the inner Link after the hook.
func (h *hooked) Link(oldRel, newRel string) error {
	return h.do("link", newRel, func() error { return h.FS.Link(oldRel, newRel) })
}

// LinkOnce is the inner LinkOnce after the hook.
func (h *hooked) LinkOnce(oldRel, newRel string) error {
	return h.do("link", newRel, func() error { return h.FS.LinkOnce(oldRel, newRel) })
}

// ReadDir is the inner ReadDir after the hook.
func (h *hooked) ReadDir(rel string) ([]rootfs.Entry, error) {
	if err := h.before("readdir", rel); err != nil {
		return nil, err
	}
	return h.FS.ReadDir(rel)
}

// ReadDirNames is the inner ReadDirNames after the hook.
func (h *hooked) ReadDirNames(rel string) ([]string, error) {
	if err := h.before("readdir", rel); err != nil {
		return nil, err
	}
	return h.FS.ReadDirNames(rel)
}

// ReadDirAll is the inner ReadDirAll after the hook.
func (h *hooked) ReadDirAll(rel string) ([]string, error) {
	if err := h.before("readdir", rel); err != nil {
		return nil, err
	}
	return h.FS.ReadDirAll(rel)
}

// ReadDirStat is the inner ReadDirStat after the hook.
func (h *hooked) ReadDirStat(rel string) ([]rootfs.Stat, error) {
	if err := h.before("readdir", rel); err != nil {
		return nil, err
	}
	return h.FS.ReadDirStat(rel)
}

// SyncFile is the inner SyncFile after the hook.
func (h *hooked) SyncFile(file *os.File) error {
	return h.do("fsync", file.Name(), func() error { return h.FS.SyncFile(file) })
}

// SyncDir is the inner SyncDir after the hook.
func (h *hooked) SyncDir(rel string) error {
	return h.do("fsync directory", rel, func() error { return h.FS.SyncDir(rel) })
}

// Syncfs is the inner Syncfs after the hook.
func (h *hooked) Syncfs() error {
	return h.do("syncfs", ".", func() error { return h.FS.Syncfs() })
}
