package ucmdir

import (
	"context"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// The GPU socket beside the control files. The daemon listens on a Unix
// socket outside the mount (Options.GPUSocket; transfer.Listen), since
// a listening socket cannot live in the daemon's own FUSE file system,
// and <mnt>/.ucm/gpu.sock is a symbolic link to it: engines find it next
// to .ucm/gpu whatever path the daemon chose, and connect(2) follows the
// link. The socket has the control files' mode and group.

// gpuSockLink is .ucm/gpu.sock, a symbolic link to the GPU socket.
type gpuSockLink struct {
	gofs.Inode
	Common
	x      *Config
	target string
	perm   uint32 // its row's mode (0777, as for any link)
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
	l.x.Host.FileAttr(&out.Attr, int64(len(l.target)), l.x.Mounted, l.perm)
	out.Mode = syscall.S_IFLNK | l.perm
	out.Blocks = 0
	return 0
}
