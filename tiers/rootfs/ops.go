package rootfs

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// OpenFile opens rel beneath the root with flag (O_CLOEXEC and O_NOFOLLOW
// added) and, when it creates, perm. The file is not registered with the
// runtime's poller (regular files gain nothing from it): os.NewFile of
// the descriptor, blocking.
func (r *Root) OpenFile(rel string, flag int, perm uint32) (*os.File, error) {
	fd, err := r.openat2(rel, flag, perm)
	if err != nil {
		return nil, r.pathErr("open", rel, err)
	}
	return os.NewFile(uintptr(fd), r.Path(rel)), nil
}

// OpenFD is OpenFile returning the bare descriptor.
func (r *Root) OpenFD(rel string, flag int, perm uint32) (int, error) {
	fd, err := r.openat2(rel, flag, perm)
	if err != nil {
		return -1, r.pathErr("open", rel, err)
	}
	return fd, nil
}

// ErrNotRegular is the error of OpenRegular for a path that is not a
// regular file (a directory, a device, a FIFO).
var ErrNotRegular = errors.New("not a regular file")

// OpenRegular opens the regular file rel read-only: a FIFO or a device
// planted where a file should be neither hangs the open nor is opened
// (O_NONBLOCK, then a check of the type; ErrNotRegular).
func (r *Root) OpenRegular(rel string) (*os.File, error) {
	fd, err := r.openat2(rel, unix.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, r.pathErr("open", rel, err)
	}
	var st unix.Stat_t
	if err := again(func() error { return unix.Fstat(fd, &st) }); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		if err == nil {
			err = ErrNotRegular
		}
		return nil, r.pathErr("open", rel, err)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFL, unix.O_RDONLY); err != nil {
		unix.Close(fd)
		return nil, r.pathErr("open", rel, err)
	}
	return os.NewFile(uintptr(fd), r.Path(rel)), nil
}

// Lstat describes rel itself (a link is described, not followed; the
// caller decides what a link there means: Lstat does not report it).
func (r *Root) Lstat(rel string, st *unix.Stat_t) error {
	if rel == "." {
		return r.pathErr("stat", rel, again(func() error { return unix.Fstat(r.FD(), st) }))
	}
	return r.at("stat", rel, func(dfd int, base string) error {
		return unix.Fstatat(dfd, base, st, unix.AT_SYMLINK_NOFOLLOW)
	})
}

// Stat is Lstat that takes a link for a missing file, and reports it:
// what the tiers ask of a path they expect a file or directory at.
func (r *Root) Stat(rel string, st *unix.Stat_t) error {
	if err := r.Lstat(rel, st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return r.pathErr("stat", rel, unix.ELOOP)
	}
	return nil
}

// Mkdir makes the directory rel with perm.
func (r *Root) Mkdir(rel string, perm uint32) error {
	return r.at("mkdir", rel, func(dfd int, base string) error { return unix.Mkdirat(dfd, base, perm) })
}

// MkdirAll makes rel and its missing parents with perm, one component at
// a time beneath the root. A component that exists must be a directory:
// a link is ELOOP (and reported), anything else ENOTDIR.
func (r *Root) MkdirAll(rel string, perm uint32) error {
	if err := Check(rel); err != nil {
		return r.pathErr("mkdir", rel, err)
	}
	if rel == "." {
		return nil
	}
	var st unix.Stat_t
	if err := r.Lstat(rel, &st); err == nil {
		return r.isDir("mkdir", rel, &st)
	}
	if dir, _ := split(rel); dir != "." {
		if err := r.MkdirAll(dir, perm); err != nil {
			return err
		}
	}
	err := r.Mkdir(rel, perm)
	if errors.Is(err, unix.EEXIST) {
		typ, err := FoundDir(r, rel, perm) // another's mkdir, perhaps under way
		if err != nil {
			return err
		}
		st.Mode = typ
		return r.isDir("mkdir", rel, &st)
	}
	return err
}

// isDir is nil for a directory, ELOOP (reported) for a link, else ENOTDIR.
func (r *Root) isDir(op, rel string, st *unix.Stat_t) error {
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return nil
	case unix.S_IFLNK:
		return r.pathErr(op, rel, unix.ELOOP)
	}
	return r.pathErr(op, rel, unix.ENOTDIR)
}

// Unlink removes the file (or link) rel.
func (r *Root) Unlink(rel string) error {
	return r.at("unlink", rel, func(dfd int, base string) error { return unix.Unlinkat(dfd, base, 0) })
}

// Rmdir removes the empty directory rel.
func (r *Root) Rmdir(rel string) error {
	return r.at("rmdir", rel, func(dfd int, base string) error { return unix.Unlinkat(dfd, base, unix.AT_REMOVEDIR) })
}

// Rename moves oldRel to newRel with renameat2's flags (0: replace, as
// rename(2); unix.RENAME_NOREPLACE: fail with EEXIST).
func (r *Root) Rename(oldRel, newRel string, flags uint) error {
	return r.at("rename", oldRel, func(ofd int, obase string) error {
		return r.at("rename", newRel, func(nfd int, nbase string) error {
			if flags == 0 {
				return unix.Renameat(ofd, obase, nfd, nbase)
			}
			return unix.Renameat2(ofd, obase, nfd, nbase, flags)
		})
	})
}

// RenameOnce is Rename that returns EINTR instead of trying again: a
// rename interrupted on a network or FUSE filesystem may have happened,
// and the caller checks before it tries again.
func (r *Root) RenameOnce(oldRel, newRel string, flags uint) error {
	return r.atOnce("rename", oldRel, func(ofd int, obase string) error {
		return r.atOnce("rename", newRel, func(nfd int, nbase string) error {
			if flags == 0 {
				return unix.Renameat(ofd, obase, nfd, nbase)
			}
			return unix.Renameat2(ofd, obase, nfd, nbase, flags)
		})
	})
}

// LinkOnce is Link that returns EINTR instead of trying again.
func (r *Root) LinkOnce(oldRel, newRel string) error {
	return r.atOnce("link", oldRel, func(ofd int, obase string) error {
		return r.atOnce("link", newRel, func(nfd int, nbase string) error {
			return unix.Linkat(ofd, obase, nfd, nbase, 0)
		})
	})
}

// Link makes newRel a hard link of oldRel (a link at oldRel is linked
// itself, never followed).
func (r *Root) Link(oldRel, newRel string) error {
	return r.at("link", oldRel, func(ofd int, obase string) error {
		return r.at("link", newRel, func(nfd int, nbase string) error {
			return unix.Linkat(ofd, obase, nfd, nbase, 0)
		})
	})
}

// Chtimes sets rel's access and modification times (a link's own).
func (r *Root) Chtimes(rel string, atime, mtime time.Time) error {
	ts := []unix.Timespec{unix.NsecToTimespec(atime.UnixNano()), unix.NsecToTimespec(mtime.UnixNano())}
	return r.at("utimes", rel, func(dfd int, base string) error {
		return unix.UtimesNanoAt(dfd, base, ts, unix.AT_SYMLINK_NOFOLLOW)
	})
}

// Statfs describes the root's filesystem.
func (r *Root) Statfs(st *unix.Statfs_t) error {
	return r.pathErr("statfs", ".", again(func() error { return unix.Fstatfs(r.FD(), st) }))
}

// SyncDir fsyncs the directory rel, so the entries in it are durable.
func (r *Root) SyncDir(rel string) error {
	fd, err := r.openat2(rel, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return r.pathErr("open directory", rel, err)
	}
	defer unix.Close(fd)
	return r.pathErr("fsync directory", rel, again(func() error { return unix.Fsync(fd) }))
}

// Syncfs syncs the root's whole filesystem.
func (r *Root) Syncfs() error {
	fd, err := r.openat2(".", unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return r.pathErr("open", ".", err)
	}
	defer unix.Close(fd)
	return r.pathErr("syncfs", ".", again(func() error { return unix.Syncfs(fd) }))
}

// ReadFile reads the regular file rel whole.
func (r *Root) ReadFile(rel string) ([]byte, error) { return ReadFile(r, rel) }

// CreateTemp creates a new file in the directory dir, named prefix and a
// random suffix, O_RDWR|O_EXCL with perm; it returns the file and its
// path beneath the root.
func (r *Root) CreateTemp(dir, prefix string, perm uint32) (*os.File, string, error) {
	return CreateTemp(r, dir, prefix, perm)
}

// WriteFile writes data to the file rel (created with perm, or truncated),
// as os.WriteFile does, beneath the root.
func (r *Root) WriteFile(rel string, data []byte, perm uint32) error {
	return WriteFile(r, rel, data, perm)
}

// ReadFile reads the regular file rel of fsys whole (OpenRegular, then
// reads): FS.ReadFile of every implementation.
func ReadFile(fsys FS, rel string) ([]byte, error) {
	f, err := fsys.OpenRegular(rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, &os.PathError{Op: "read", Path: fsys.Path(rel), Err: err}
	}
	return b, nil
}

// CreateTemp creates a new file in the directory dir of fsys, named
// prefix and a random suffix, O_RDWR|O_CREAT|O_EXCL with perm, and
// returns it and its path beneath the root: FS.CreateTemp of every
// implementation.
func CreateTemp(fsys FS, dir, prefix string, perm uint32) (*os.File, string, error) {
	for range 100 {
		rel := prefix + randomSuffix()
		if dir != "." {
			rel = dir + "/" + rel
		}
		f, err := fsys.OpenFile(rel, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL, perm)
		if errors.Is(err, unix.EEXIST) {
			continue
		}
		return f, rel, err
	}
	return nil, "", &os.PathError{Op: "open", Path: fsys.Path(dir + "/" + prefix + "*"), Err: unix.EEXIST}
}

// randomSuffix returns 16 hex characters for temp names.
func randomSuffix() string { return fmt.Sprintf("%016x", rand.Uint64()) }

// WriteFile writes data to the file rel of fsys (created with perm, or
// truncated), as os.WriteFile does: FS.WriteFile of every
// implementation.
func WriteFile(fsys FS, rel string, data []byte, perm uint32) error {
	f, err := fsys.OpenFile(rel, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
