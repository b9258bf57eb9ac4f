package mem

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// privateTmpfs mounts a tmpfs of the memory tier's own, with transparent
// huge pages for files that fill them (huge=within_size: a 2 MiB block
// takes one huge page instead of 512 small ones, which halves the cost of
// reading and writing it), opens its root and detaches the mount at once.
//
// The filesystem is then reachable only through the returned directory,
// /proc/self/fd/N of the held descriptor: no other process sees it, and the
// kernel frees it when the descriptor closes, at Close or when the daemon
// dies, kill -9 included, so nothing is left behind to clean up. Mounting
// needs CAP_SYS_ADMIN; without it the caller falls back to a directory on
// /dev/shm. size is the tmpfs's size (0: tmpfs's default, half the RAM);
// the tier's own capacity is what bounds its published files, size bounds
// them and the files being written together.
func privateTmpfs(parent string, size int64) (string, *os.File, error) {
	mp, err := os.MkdirTemp(parent, ".ucmfs-mnt-")
	if err != nil {
		return "", nil, err
	}
	defer os.Remove(mp)
	if err := unix.Mount("ucmfs-mem", mp, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, tmpfsOptions(size)); err != nil {
		return "", nil, fmt.Errorf("mount tmpfs: %w", err)
	}
	f, err := os.Open(mp)
	if err == nil {
		err = unix.Unmount(mp, unix.MNT_DETACH)
		if err != nil {
			f.Close()
		}
	}
	if err != nil {
		_ = unix.Unmount(mp, unix.MNT_DETACH)
		return "", nil, fmt.Errorf("detach tmpfs: %w", err)
	}
	return "/proc/self/fd/" + strconv.Itoa(int(f.Fd())), f, nil
}

// tmpfsOptions are the private tmpfs's mount options.
func tmpfsOptions(size int64) string {
	opts := "mode=0700,huge=within_size"
	if size > 0 {
		opts += ",size=" + strconv.FormatInt(size, 10)
	}
	return opts
}

// tmpfsSize is the private tmpfs's size: the capacity, the room for files
// being written and for removed files not yet released (late.go), and
// a slack for directories (0 when Pending is 0).
func tmpfsSize(cfg Config) int64 {
	if cfg.Pending <= 0 {
		return 0
	}
	return cfg.Capacity + cfg.Pending + lateMaxBytes + 16<<20
}

// isProcFd reports whether root is a /proc/self/fd path (a private tmpfs).
func isProcFd(root string) bool { return strings.HasPrefix(root, "/proc/self/fd/") }
