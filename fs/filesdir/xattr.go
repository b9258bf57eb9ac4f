package filesdir

import (
	"context"
	"syscall"

	"github.com/ucmfs/ucmfs/store"
)

// xattrs is the attribute table of a directory below a files model's
// root: user.ucm.pinned, its directory pin.
func (d *Dir) xattrs() *store.Attrs { return d.x.Store.DirAttrs(d.where()) }

// whatDir names the directory in logs.
func (d *Dir) whatDir() string {
	model, dir := d.where()
	return model + "/" + dir
}

// Getxattr serves user.ucm.pinned of a directory of a files model.
func (d *Dir) Getxattr(ctx context.Context, attr string, dest []byte) (uint32, syscall.Errno) {
	return d.x.Host.Getxattr(d.xattrs(), d.whatDir(), attr, dest)
}

// Setxattr pins the directory (1: every file beneath kept in memory) or
// unpins it (0). The kernel checked write permission on the directory.
func (d *Dir) Setxattr(ctx context.Context, attr string, data []byte, flags uint32) syscall.Errno {
	return d.x.Host.Setxattr(d.xattrs(), d.whatDir(), attr, data)
}

// Removexattr is refused: the attribute always exists.
func (d *Dir) Removexattr(ctx context.Context, attr string) syscall.Errno {
	return d.x.Host.Removexattr(d.xattrs(), d.whatDir(), attr)
}

// Listxattr lists user.ucm.pinned.
func (d *Dir) Listxattr(ctx context.Context, dest []byte) (uint32, syscall.Errno) {
	return d.x.Host.Listxattr(d.xattrs(), dest)
}
