package fs

import (
	"context"
	"fmt"
	"os"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/ucmfs/ucmfs/control"
)

// The GPU socket beside the control files. The daemon listens on a Unix
// socket outside the mount (Options.GPUSocket; control.ListenGPU), since
// a listening socket cannot live in the daemon's own FUSE file system,
// and <mnt>/.ucm/gpu.sock is a symbolic link to it: engines find it next
// to .ucm/gpu whatever path the daemon chose, and connect(2) follows the
// link. The socket has the control files' mode and group.

// gpuSockName is the link's name in .ucm/.
const gpuSockName = "gpu.sock"

// listenGPU opens the GPU socket of a mount with a GPU device, when
// Options.GPUSocket names one.
func (s *fsState) listenGPU() error {
	if s.env.GPU == nil || s.opts.GPUSocket == "" {
		return nil
	}
	sock, err := control.ListenGPU(s.env, s.opts.GPUSocket, os.FileMode(s.control.Perm), 0)
	if err != nil {
		return fmt.Errorf("gpu socket: %w", err)
	}
	if s.control.Group {
		if err := os.Chown(sock.Path(), -1, int(s.control.Gid)); err != nil {
			sock.Close()
			return fmt.Errorf("gpu socket: %w", err)
		}
	}
	s.env.GPUSocket = sock
	return nil
}

// closeGPU closes the GPU socket, if any: the descriptors waiting under
// tokens are closed and the socket file removed.
func (s *fsState) closeGPU() {
	if sock := s.env.GPUSocket; sock != nil {
		if err := sock.Close(); err != nil {
			s.log.Warn("closing the gpu socket", "socket", sock.Path(), "err", err)
		}
	}
}

// gpuSockLink is .ucm/gpu.sock, a symbolic link to the GPU socket.
type gpuSockLink struct {
	gofs.Inode
	common
	target string
}

var (
	_ = (gofs.NodeReadlinker)((*gpuSockLink)(nil))
	_ = (gofs.NodeGetattrer)((*gpuSockLink)(nil))
)

// Readlink returns the socket's path.
func (l *gpuSockLink) Readlink(ctx context.Context) ([]byte, syscall.Errno) {
	return []byte(l.target), 0
}

// Getattr describes the link.
func (l *gpuSockLink) Getattr(ctx context.Context, fh gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	l.s.fileAttr(&out.Attr, int64(len(l.target)), l.s.mounted, 0o777)
	out.Mode = syscall.S_IFLNK | 0o777
	out.Blocks = 0
	return 0
}
