package rootfs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Root is a directory held open by descriptor, beneath which every
// operation of this package is taken. It is safe for concurrent use.
type Root struct {
	fd    atomic.Int32 // the root's descriptor now (Reopen changes it)
	name  string
	owned bool // Close closes fd
	// canon is name with its links resolved when Open opened it, and uid
	// the directory's owner then: Gone, PathIsDir and Reopen look at
	// canon with no link followed, and Reopen takes only a directory of
	// the same owner (a link or another user's directory put at the path
	// while mounted is never taken: docs/operations.md).
	canon string
	uid   uint32

	mu   sync.Mutex
	past []int // descriptors Reopen replaced, closed at Close

	// OnLink, when set, is called with the path of every symbolic link
	// (or way out of the root) an operation meets and refuses. Set it
	// before the Root is shared.
	OnLink func(rel string)
	links  atomic.Int64
}

// resolve is how every path beneath a Root is resolved.
const resolve = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// Open opens the directory dir (made with mode perm, and its parents with
// 0o755, if missing and perm is not 0) as a Root. dir itself is resolved
// as usual, once: it is the administrator's path (Canonical says where
// its links led).
func Open(dir string, perm os.FileMode) (*Root, error) {
	if perm != 0 {
		if err := os.MkdirAll(dir, perm); err != nil {
			return nil, err
		}
	}
	canon, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, err
	}
	if canon, err = filepath.Abs(canon); err != nil {
		return nil, err
	}
	var fd int
	err = again(func() (err error) {
		fd, err = unix.Open(canon, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "stat", Path: dir, Err: err}
	}
	r := &Root{name: dir, owned: true, canon: canon, uid: st.Uid}
	r.fd.Store(int32(fd))
	return r, nil
}

// FromFD makes a Root of the directory descriptor fd, which the caller
// keeps and closes (after the Root's last use); name is the directory's
// path, for messages and Name.
func FromFD(fd int, name string) *Root {
	r := &Root{name: name, canon: name}
	r.fd.Store(int32(fd))
	return r
}

// Name is the path the Root was opened at.
func (r *Root) Name() string { return r.name }

// Canonical is the path the Root's directory had when Open opened it,
// its links resolved: Name itself when it holds no link.
func (r *Root) Canonical() string { return r.canon }

// FD is the root's descriptor (O_PATH when Open made it): for the
// system calls this package does not wrap, with paths checked by Check.
func (r *Root) FD() int { return int(r.fd.Load()) }

// Links is how many links (or ways out) the Root's operations refused.
func (r *Root) Links() int64 { return r.links.Load() }

// Close closes the root's descriptor if Open made it.
func (r *Root) Close() error {
	r.mu.Lock()
	for _, fd := range r.past {
		unix.Close(fd)
	}
	r.past = nil
	r.mu.Unlock()
	if fd := int(r.fd.Swap(-1)); r.owned && fd >= 0 {
		return unix.Close(fd)
	}
	return nil
}

// Path is the full path of rel, for messages and for files handed to
// code that wants a name; nothing of this package resolves it.
func (r *Root) Path(rel string) string {
	if rel == "." || rel == "" {
		return r.name
	}
	return r.name + "/" + rel
}

// errOutside is the error of a path that is not a clean relative path.
var errOutside = unix.EXDEV

// Check reports whether rel is a path this package accepts: relative,
// slash-separated, no empty, "." or ".." component ("." alone is the
// root), no NUL.
func Check(rel string) error {
	if rel == "." {
		return nil
	}
	if rel == "" || rel[0] == '/' || strings.IndexByte(rel, 0) >= 0 {
		return errOutside
	}
	for rest := rel; ; {
		i := strings.IndexByte(rest, '/')
		c := rest
		if i >= 0 {
			c = rest[:i]
		}
		if c == "" || c == "." || c == ".." {
			return errOutside
		}
		if i < 0 {
			return nil
		}
		rest = rest[i+1:]
	}
}

// split returns rel's parent ("." for the root) and last component.
func split(rel string) (dir, base string) {
	i := strings.LastIndexByte(rel, '/')
	if i < 0 {
		return ".", rel
	}
	return rel[:i], rel[i+1:]
}

// pathErr wraps err as the os package does, and reports a refused link.
func (r *Root) pathErr(op, rel string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) && op != "rename" && op != "link" {
		r.met(rel)
	}
	return &os.PathError{Op: op, Path: r.Path(rel), Err: err}
}

// met counts and reports a link (or a way out) met at rel.
func (r *Root) met(rel string) {
	r.links.Add(1)
	if r.OnLink != nil {
		r.OnLink(rel)
	}
}

// again calls fn for as long as it fails with EINTR (a FUSE or network
// filesystem interrupted by the runtime's signals; see tiers' eintr.go).
func again(fn func() error) error {
	for {
		if err := fn(); !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// openat2 opens rel beneath the root with flags and mode, resolved with
// no link (O_CLOEXEC and O_NOFOLLOW added).
func (r *Root) openat2(rel string, flags int, mode uint32) (int, error) {
	if err := Check(rel); err != nil {
		return -1, err
	}
	how := unix.OpenHow{Flags: uint64(flags | unix.O_CLOEXEC | unix.O_NOFOLLOW), Resolve: resolve}
	// A mode only where the open may create (openat2 refuses one
	// otherwise): O_TMPFILE is two bits, one of them O_DIRECTORY.
	if flags&unix.O_CREAT != 0 || flags&unix.O_TMPFILE == unix.O_TMPFILE {
		how.Mode = uint64(mode)
	}
	var fd int
	err := again(func() (err error) {
		fd, err = unix.Openat2(r.FD(), rel, &how)
		return err
	})
	switch {
	case err == nil && flags&unix.O_PATH != 0 && flags&unix.O_DIRECTORY == 0:
		// O_PATH|O_NOFOLLOW opens a link at the last component itself.
		var st unix.Stat_t
		if err = unix.Fstat(fd, &st); err == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
			err = unix.ELOOP
		}
		if err != nil {
			unix.Close(fd)
			return -1, err
		}
	case errors.Is(err, unix.ENOTDIR) && flags&unix.O_DIRECTORY != 0 && r.isLink(rel):
		// O_DIRECTORY|O_NOFOLLOW says ENOTDIR of a link at the last
		// component: it is a link, and refused as one.
		err = unix.ELOOP
	}
	return fd, err
}

// isLink reports whether rel (whose parent resolves beneath the root)
// is a link.
func (r *Root) isLink(rel string) bool {
	var st unix.Stat_t
	how := unix.OpenHow{Flags: unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC, Resolve: resolve}
	fd, err := unix.Openat2(r.FD(), rel, &how)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	return unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK
}

// dirFD opens the directory rel beneath the root, O_PATH: the parent of
// the *at calls. The root itself is returned as is (opened false: the
// caller does not close it).
func (r *Root) dirFD(rel string) (fd int, opened bool, err error) {
	if rel == "." {
		return r.FD(), false, nil
	}
	fd, err = r.openat2(rel, unix.O_PATH|unix.O_DIRECTORY, 0)
	return fd, err == nil, err
}

// at runs fn with the descriptor of rel's parent and rel's last
// component, again while it fails with EINTR.
func (r *Root) at(op, rel string, fn func(dirfd int, base string) error) error {
	return r.atOnce(op, rel, func(dfd int, base string) error { return again(func() error { return fn(dfd, base) }) })
}

// atOnce is at with EINTR returned to the caller.
func (r *Root) atOnce(op, rel string, fn func(dirfd int, base string) error) error {
	if err := Check(rel); err != nil || rel == "." {
		if err == nil {
			err = unix.EINVAL // no operation here acts on the root itself by name
		}
		return r.pathErr(op, rel, err)
	}
	dir, base := split(rel)
	dfd, opened, err := r.dirFD(dir)
	if err != nil {
		return r.pathErr(op, rel, err)
	}
	if opened {
		defer unix.Close(dfd)
	}
	return r.pathErr(op, rel, fn(dfd, base))
}
