package uring

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"unsafe"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// Mount mounts a FUSE file system at mnt with mount(2), as go-fuse's
// DirectMount does (root only), and returns the /dev/fuse descriptor of
// its connection: the one go-fuse answers INIT on (given as /dev/fd/N) and
// the rings are registered for.
func Mount(mnt string, o *fuse.MountOptions) (int, error) {
	var st unix.Stat_t
	if err := unix.Stat(mnt, &st); err != nil {
		return -1, err
	}
	fd, err := unix.Open("/dev/fuse", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, needsRoot(fmt.Errorf("/dev/fuse: %w", err))
	}
	opts := []string{
		fmt.Sprintf("fd=%d", fd),
		fmt.Sprintf("rootmode=%o", st.Mode&unix.S_IFMT),
		fmt.Sprintf("user_id=%d", os.Geteuid()),
		fmt.Sprintf("group_id=%d", os.Getegid()),
		fmt.Sprintf("max_read=%d", o.MaxWrite),
	}
	opts = append(opts, o.Options...)
	if o.AllowOther {
		opts = append(opts, "allow_other")
	}
	source := o.FsName
	if source == "" {
		source = o.Name
	}
	if err := unix.Mount(source, mnt, "fuse."+o.Name, unix.MS_NOSUID|unix.MS_NODEV, strings.Join(opts, ",")); err != nil {
		unix.Close(fd)
		return -1, needsRoot(err)
	}
	return fd, nil
}

// ErrNeedsRoot: the mount over io_uring is made with mount(2), which needs
// root (CAP_SYS_ADMIN); others mount with fusermount over /dev/fuse.
var ErrNeedsRoot = errors.New("FUSE over io_uring mounts with mount(2), which needs root")

// needsRoot marks a refusal (EPERM, EACCES) as ErrNeedsRoot.
func needsRoot(err error) error {
	if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
		return fmt.Errorf("%w: %w", ErrNeedsRoot, err)
	}
	return err
}

// Unmount unmounts mnt (umount(2)).
func Unmount(mnt string) error { return unix.Unmount(mnt, 0) }

// NewProtocolServer returns the protocol server that answers the requests
// of a connection whose INIT srv answered: it is told that INIT, so that it
// decodes and answers every later request as srv would.
func NewProtocolServer(fs fuse.RawFileSystem, o *fuse.MountOptions, srv *fuse.Server) (*fuse.ProtocolServer, error) {
	ps := fuse.NewProtocolServer(fs, o)
	in := *srv.KernelSettings()
	in.InHeader = fuse.InHeader{Length: uint32(unsafe.Sizeof(in)), Opcode: opInit, Unique: 1}
	req := unsafe.Slice((*byte)(unsafe.Pointer(&in)), unsafe.Sizeof(in))
	out := make([]byte, 4096)
	if _, status := ps.HandleRequest([][]byte{req}, [][]byte{out}); !status.Ok() {
		return nil, fmt.Errorf("FUSE INIT: %v", status)
	}
	return ps, nil
}

const opInit = 26 // FUSE_INIT

// Offered reports whether the kernel offered io_uring in the INIT srv
// answered (and so, since the daemon asked for it, uses it).
func Offered(srv *fuse.Server) bool {
	return srv.KernelSettings().Flags64()&fuse.CAP_OVER_IO_URING != 0
}

// PollHack has the kernel learn, with one POLL answered ENOSYS, that the
// file system does not poll, as go-fuse's WaitMount does for its own loop:
// else a poll of a file of the mount by the daemon's own runtime could
// wait on the daemon. The name is one go-fuse's protocol server answers.
func PollHack(mnt string) error {
	fd, err := unix.Open(mnt+"/.go-fuse-epoll-hack", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	_, _ = unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN | unix.POLLPRI | unix.POLLOUT}}, 0)
	return unix.Close(fd)
}
