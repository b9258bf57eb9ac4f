package fs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
)

// errNoPassthrough: the kernel did not offer FUSE passthrough.
var errNoPassthrough = errors.New("the kernel does not offer FUSE passthrough (Linux 6.9 or later)")

// probePassthrough checks, once at mount, that the kernel takes a file of
// every tier as a passthrough backing file (it needs CAP_SYS_ADMIN, and a
// tier on a stacked file system may be too deep). go-fuse turns
// passthrough off for the whole mount at the first refused registration,
// and an inode cannot be open in passthrough and normal mode at once, so
// the mount uses it for every file or for none.
func (s *Server) probePassthrough() error {
	if s.srv.KernelSettings().Flags64()&fuse.CAP_PASSTHROUGH == 0 {
		return errNoPassthrough
	}
	for _, dir := range s.state.store.TierDirs() {
		if err := s.probeDir(dir); err != nil {
			return err
		}
	}
	return nil
}

// probeDir registers and unregisters an unnamed file of dir.
func (s *Server) probeDir(dir string) error {
	f, err := tempFile(dir)
	if err != nil {
		return fmt.Errorf("passthrough probe in %s: %w", dir, err)
	}
	defer f.Close()
	id, errno := s.srv.RegisterBackingFd(&fuse.BackingMap{Fd: int32(f.Fd())})
	if errno != 0 {
		return fmt.Errorf("registering a backing file of %s: %w", dir, errno)
	}
	if errno := s.srv.UnregisterBackingFd(id); errno != 0 {
		s.state.log.Warn("passthrough probe: unregistering the backing file", "dir", dir, "errno", errno)
	}
	return nil
}

// tempFile opens a file in dir that has no name: O_TMPFILE, or where the
// file system lacks it, a new file unlinked at once.
func tempFile(dir string) (*os.File, error) {
	fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0o600)
	if err == nil {
		return os.NewFile(uintptr(fd), filepath.Join(dir, "(probe)")), nil
	}
	f, err := os.CreateTemp(dir, ".ucmfs-probe-*")
	if err != nil {
		return nil, err
	}
	os.Remove(f.Name())
	return f, nil
}

// isMountpoint reports whether path is the mount point of a mount in this
// mount namespace (the mount table, /proc/thread-self/mountinfo).
func isMountpoint(path string) (bool, error) {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	mounts, err := mountinfo.GetMounts(mountinfo.SingleEntryFilter(path))
	if err != nil {
		return false, fmt.Errorf("checking the mountpoint: %w", err)
	}
	return len(mounts) > 0, nil
}
