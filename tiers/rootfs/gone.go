package rootfs

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Gone reports whether the directory the Root holds is no longer the one
// at its path: removed (its link count is 0: rm -rf of the tier), or
// another directory (or nothing, or not a directory) at the path now
// (removed and made again, a filesystem unmounted from under it). why
// says which. An error is a question not answered (the filesystem does
// not answer): nothing is decided then.
func (r *Root) Gone() (gone bool, why string, err error) {
	var held, now unix.Stat_t
	if err = again(func() error { return unix.Fstat(r.FD(), &held) }); err != nil {
		if errors.Is(err, unix.ESTALE) {
			return true, "its directory is gone from its filesystem (ESTALE)", nil
		}
		return false, "", err
	}
	if held.Nlink == 0 {
		return true, "its directory was removed", nil
	}
	err = again(func() error { return unix.Lstat(r.canon, &now) })
	switch {
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTDIR), errors.Is(err, unix.ELOOP):
		return true, "nothing is at its path now", nil
	case err != nil:
		return false, "", err
	case now.Mode&unix.S_IFMT == unix.S_IFLNK:
		return true, "a symbolic link is at its path now", nil
	case now.Mode&unix.S_IFMT != unix.S_IFDIR:
		return true, "its path is no directory now", nil
	case now.Dev != held.Dev || now.Ino != held.Ino:
		return true, fmt.Sprintf("another directory is at its path now (device %d inode %d, was %d %d)", now.Dev, now.Ino, held.Dev, held.Ino), nil
	}
	return false, "", nil
}

// Reopen makes the Root hold the directory at its path now (after Gone:
// the directory made again, its filesystem mounted again). The path is
// the canonical one Open found, resolved with no link anywhere in it
// (openat2 RESOLVE_NO_SYMLINKS), and the directory there must belong to
// the owner the first one had: a link, or a directory another user made,
// put at the path while mounted is refused (ELOOP, EPERM), so that whoever
// may write the path's parent (a share's root) cannot point the daemon
// elsewhere. Operations already under way finish on the directory they
// started in; its descriptor is closed at Close.
func (r *Root) Reopen() error {
	how := unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
	var fd int
	err := again(func() (err error) {
		fd, err = unix.Openat2(unix.AT_FDCWD, r.canon, &how)
		return err
	})
	if err != nil {
		return r.pathErr("open", ".", err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Uid != r.uid {
		unix.Close(fd)
		if err == nil {
			err = fmt.Errorf("%w: the directory at the path now belongs to uid %d, the tier's to uid %d", unix.EPERM, st.Uid, r.uid)
		}
		return &os.PathError{Op: "open", Path: r.name, Err: err}
	}
	old := int(r.fd.Swap(int32(fd)))
	if r.owned && old >= 0 {
		r.mu.Lock()
		r.past = append(r.past, old)
		r.mu.Unlock()
	}
	return nil
}

// PathIsDir reports whether a directory (not a link to one) is at the
// Root's canonical path now.
func (r *Root) PathIsDir() bool {
	var st unix.Stat_t
	return again(func() error { return unix.Lstat(r.canon, &st) }) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR
}
