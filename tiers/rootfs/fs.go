package rootfs

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// FS is the filesystem under a tier: every operation the tiers take on
// their directory, relative to its root. A tier holds an FS, never a
// path (tiers.DirConfig.OpenFS chooses which). Three implement it:
//
//   - *Root, the real one: beneath a held descriptor, no symbolic link
//     (this package's doc). Every daemon's tier uses it.
//   - crashfs.FS (package tiers/rootfs/crashfs), for tests: a Root over
//     a scratch directory whose Disk keeps the strict durable state (a
//     file's bytes as of its last SyncFile, a directory's names as of
//     its last SyncDir, everything at a Syncfs), forgets the rest at a
//     simulated power cut, and injects errors (EIO, ENOSPC, EDQUOT), a
//     stall or a power cut before any chosen operation.
//   - memfs.FS (package tiers/rootfs/memfs), for tests: no directory on
//     any disk, a tree in memory whose files are memfd_create files (real
//     descriptors, no disk behind them).
//
// crashfs.Wrap puts crashfs's fault hook before the operations of any of
// them (a test's way to act between two operations of a tier).
//
// Package tiers/rootfs/rootfstest holds the table of operations all
// three answer alike.
//
// Data moves through the *os.File an open returns (pwrite, O_DIRECT,
// fsetxattr, mmap, a passthrough descriptor): those stay real
// descriptors, since the memory tier maps them and the kernel reads them
// through FUSE passthrough. What makes data durable goes through the FS
// (SyncFile, SyncDir, Syncfs), so a crash filesystem sees every sync.
type FS interface {
	// Name is the root's path; Path(rel) the full path of rel, for
	// messages and for files handed to code that wants a name.
	Name() string
	Path(rel string) string
	// FD is the root's descriptor, for the few calls not wrapped here:
	// -1 where there is none (memfs), so a caller must take the EBADF of
	// a call on it as "no answer" (the tiers' fstatfs and fstat do).
	FD() int
	// SetOnLink sets the function told of every link an operation
	// refuses; Links counts them.
	SetOnLink(fn func(rel string))
	Links() int64
	Close() error

	OpenFile(rel string, flag int, perm uint32) (*os.File, error)
	OpenFD(rel string, flag int, perm uint32) (int, error)
	OpenRegular(rel string) (*os.File, error)
	CreateTemp(dir, prefix string, perm uint32) (*os.File, string, error)
	ReadFile(rel string) ([]byte, error)
	WriteFile(rel string, data []byte, perm uint32) error

	Lstat(rel string, st *unix.Stat_t) error
	Stat(rel string, st *unix.Stat_t) error
	Statfs(st *unix.Statfs_t) error
	Getxattr(rel, name string, buf []byte) (int, error)
	Chtimes(rel string, atime, mtime time.Time) error

	Mkdir(rel string, perm uint32) error
	MkdirAll(rel string, perm uint32) error
	Unlink(rel string) error
	Rmdir(rel string) error
	RemoveAll(rel string) error
	Rename(oldRel, newRel string, flags uint) error
	RenameOnce(oldRel, newRel string, flags uint) error
	Link(oldRel, newRel string) error
	LinkOnce(oldRel, newRel string) error

	ReadDir(rel string) ([]Entry, error)
	ReadDirNames(rel string) ([]string, error)
	ReadDirAll(rel string) ([]string, error)
	ReadDirStat(rel string) ([]Stat, error)

	// SyncFile makes f's data and metadata durable (fsync of a file this
	// FS opened); SyncDir the entries of the directory rel; Syncfs all.
	SyncFile(f *os.File) error
	SyncDir(rel string) error
	Syncfs() error

	Gone() (gone bool, why string, err error)
	Reopen() error
	PathIsDir() bool
}

var _ FS = (*Root)(nil)

// SetOnLink sets OnLink (before the Root is shared).
func (r *Root) SetOnLink(fn func(rel string)) { r.OnLink = fn }

// SyncFile fsyncs f (a file opened beneath the root).
func (r *Root) SyncFile(f *os.File) error { return f.Sync() }
