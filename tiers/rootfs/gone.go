package rootfs

import (
	"errors"
	"fmt"

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
	err = again(func() error { return unix.Stat(r.name, &now) })
	switch {
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTDIR):
		return true, "nothing is at its path now", nil
	case err != nil:
		return false, "", err
	case now.Mode&unix.S_IFMT != unix.S_IFDIR:
		return true, "its path is no directory now", nil
	case now.Dev != held.Dev || now.Ino != held.Ino:
		return true, fmt.Sprintf("another directory is at its path now (device %d inode %d, was %d %d)", now.Dev, now.Ino, held.Dev, held.Ino), nil
	}
	return false, "", nil
}

// Reopen makes the Root hold the directory at its path now (after Gone:
// the directory made again, its filesystem mounted again). Operations
// already under way finish on the directory they started in; its
// descriptor is closed at Close.
func (r *Root) Reopen() error {
	var fd int
	err := again(func() (err error) {
		fd, err = unix.Open(r.name, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return r.pathErr("open", ".", err)
	}
	old := int(r.fd.Swap(int32(fd)))
	if r.owned && old >= 0 {
		r.mu.Lock()
		r.past = append(r.past, old)
		r.mu.Unlock()
	}
	return nil
}

// PathIsDir reports whether a directory is at the Root's path now.
func (r *Root) PathIsDir() bool {
	var st unix.Stat_t
	return again(func() error { return unix.Stat(r.name, &st) }) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR
}
