package memfs

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/ucmfs/ucmfs/tiers/rootfs"
	"golang.org/x/sys/unix"
)

// FS is a rootfs.FS on a Disk: its operations act on the disk's tree,
// and answer with the errors the real rootfs.Root answers with (an
// *os.PathError of the same op, path and errno).
type FS struct {
	d      *Disk
	closed atomic.Bool
	onLink func(rel string)
	links  atomic.Int64
}

var _ rootfs.FS = (*FS)(nil)

// Name is the disk's directory.
func (f *FS) Name() string { return f.d.dir }

// Path is the full path of rel, for messages.
func (f *FS) Path(rel string) string {
	if rel == "." || rel == "" {
		return f.d.dir
	}
	return f.d.dir + "/" + rel
}

// FD is -1: the root is no directory of the kernel's (package doc).
func (f *FS) FD() int { return -1 }

// SetOnLink sets the function told of every path refused as a way out of
// the root (no link is ever met in memory).
func (f *FS) SetOnLink(fn func(rel string)) { f.onLink = fn }

// Links is how many paths the FS refused as ways out of the root.
func (f *FS) Links() int64 { return f.links.Load() }

// Close ends the view: its operations fail with EBADF from now on, as a
// closed Root's do. The disk keeps its files.
func (f *FS) Close() error {
	f.closed.Store(true)
	return nil
}

// Gone is never true: nothing can take the disk away.
func (f *FS) Gone() (bool, string, error) { return false, "", nil }

// Reopen has nothing to do.
func (f *FS) Reopen() error { return nil }

// PathIsDir is true: the root is always there.
func (f *FS) PathIsDir() bool { return true }

// pathErr wraps err as the Root does (a way out of the root is reported,
// but for rename and link).
func (f *FS) pathErr(op, rel string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, unix.EXDEV) && op != "rename" && op != "link" {
		f.links.Add(1)
		if f.onLink != nil {
			f.onLink(rel)
		}
	}
	return &os.PathError{Op: op, Path: f.Path(rel), Err: err}
}

// check is rootfs.Check, then EBADF once the view or its disk is
// closed, then ENAMETOOLONG for a name (255 bytes) or a path (4095) the
// kernel would refuse.
func (f *FS) check(rel string) error {
	if err := rootfs.Check(rel); err != nil {
		return err
	}
	if f.closed.Load() || f.d.closed.Load() {
		return unix.EBADF
	}
	if len(rel) >= unix.PathMax {
		return unix.ENAMETOOLONG
	}
	for c := range strings.SplitSeq(rel, "/") {
		if len(c) > nameMax {
			return unix.ENAMETOOLONG
		}
	}
	return nil
}

// nameMax is the longest name a directory takes (NAME_MAX).
const nameMax = 255

// at runs fn with rel's parent directory and last component (the disk's
// lock held by the caller), as Root.at: a bad path is EXDEV, the root
// itself EINVAL.
func (f *FS) at(op, rel string, fn func(p *node, base string) error) error {
	err := f.check(rel)
	if err == nil && rel == "." {
		err = unix.EINVAL
	}
	if err != nil {
		return f.pathErr(op, rel, err)
	}
	dir, base := split(rel)
	p, err := f.d.walk(dir)
	if err != nil {
		return f.pathErr(op, rel, err)
	}
	return f.pathErr(op, rel, fn(p, base))
}

// find is the node at rel ("." the root; nil, no error, when its parent
// is there but it is not), the disk's lock held by the caller.
func (f *FS) find(rel string) (p *node, base string, n *node, err error) {
	if err := f.check(rel); err != nil {
		return nil, "", nil, err
	}
	if rel == "." {
		return nil, ".", f.d.root, nil
	}
	dir, base := split(rel)
	if p, err = f.d.walk(dir); err != nil {
		return nil, "", nil, err
	}
	return p, base, p.kids[base], nil
}

// split returns rel's parent ("." for the root) and last component.
func split(rel string) (dir, base string) {
	for i := len(rel) - 1; i >= 0; i-- {
		if rel[i] == '/' {
			return rel[:i], rel[i+1:]
		}
	}
	return ".", rel
}

// reopen opens the file n again through its /proc/self/fd entry with
// flag: a new open file of the same memfd (the flags that name a path's
// creation or resolution dropped: the tree did those).
func reopen(n *node, flag int) (int, error) {
	flag &^= unix.O_CREAT | unix.O_EXCL | unix.O_NOFOLLOW | unix.O_DIRECTORY
	for {
		fd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(n.fd()), flag|unix.O_CLOEXEC, 0)
		if !errors.Is(err, unix.EINTR) {
			return fd, err
		}
	}
}
