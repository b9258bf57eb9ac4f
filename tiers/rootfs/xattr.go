package rootfs

import (
	"strconv"

	"golang.org/x/sys/unix"
)

// Getxattr reads the extended attribute name of the file rel into buf.
// The file is opened beneath the root as O_PATH (no link; a FIFO or a
// device planted at rel is never opened for I/O), and its attribute
// read through the descriptor's /proc/self/fd entry: getxattr of that
// magic link reads the file the descriptor holds, and no path of the
// tier is resolved again. (fgetxattr refuses O_PATH descriptors.)
func (r *Root) Getxattr(rel, name string, buf []byte) (int, error) {
	fd, err := r.openat2(rel, unix.O_PATH, 0)
	if err != nil {
		return 0, r.pathErr("getxattr", rel, err)
	}
	defer unix.Close(fd)
	var n int
	err = again(func() (err error) {
		n, err = unix.Getxattr("/proc/self/fd/"+strconv.Itoa(fd), name, buf)
		return err
	})
	return n, r.pathErr("getxattr", rel, err)
}
