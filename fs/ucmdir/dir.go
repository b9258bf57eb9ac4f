package ucmdir

import (
	"context"
	"log/slog"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/ucmfs/ucmfs/control"
	"github.com/ucmfs/ucmfs/store"
	"github.com/ucmfs/ucmfs/vfs"
)

// ucmName is the control directory's name in the root.
const ucmName = control.Dir

// Common is what every node of the mount answers alike (package fs's
// common: statfs; rename, link, symlink and mknod refused; no extended
// attributes). The nodes here embed it, so go-fuse finds its methods on
// them.
type Common interface {
	gofs.NodeStatfser
	gofs.NodeRenamer
	gofs.NodeLinker
	gofs.NodeSymlinker
	gofs.NodeMknoder
	gofs.NodeGetxattrer
	gofs.NodeSetxattrer
	gofs.NodeRemovexattrer
	gofs.NodeListxattrer
}

// DirNode is Common for a directory (package fs's dirCommon): create and
// unlink refused, fsync of the tiers, setattr of times only.
type DirNode interface {
	Common
	gofs.NodeCreater
	gofs.NodeUnlinker
	gofs.NodeFsyncer
	gofs.NodeSetattrer
}

// Host is the adapter as the control directory sees it.
type Host interface {
	// Fail turns err into an errno and logs the refused request.
	Fail(op, path string, err error) syscall.Errno
	// Errno turns err into an errno, logging nothing.
	Errno(err error) syscall.Errno
	// Uid is the user of the process that sent the request.
	Uid(ctx context.Context) uint32
	// DirAttr fills the attributes of a directory.
	DirAttr(a *fuse.Attr, nlink uint32)
	// FileAttr fills the attributes of a regular file.
	FileAttr(a *fuse.Attr, size int64, mtime time.Time, perm uint32)
	// Node is what every node answers alike; Dir that of directory what.
	Node() Common
	Dir(what string) DirNode
}

// Config is what the control directory's nodes share.
type Config struct {
	Host     Host
	Env      *control.Env    // what the sessions share
	Store    *store.Store    // whose snapshot .ucm/stats is
	Access   control.Access  // who may use the session files
	Open     *vfs.UserBudget // the open files users hold, which sessions count in
	Log      *slog.Logger
	EntryTTL time.Duration // of the directory's attributes
	Mounted  time.Time     // the files' times
}

// New returns the node of the control directory.
func New(c Config) gofs.InodeEmbedder {
	return &ucmDir{DirNode: c.Host.Dir(ucmName), x: &c}
}

// ucmDir is <mnt>/.ucm/, the control directory. Its files are a static
// subtree built in OnAdd, with numbers from the reserved range.
type ucmDir struct {
	gofs.Inode
	DirNode
	x *Config
}

var (
	_ = (gofs.NodeOnAdder)((*ucmDir)(nil))
	_ = (gofs.NodeGetattrer)((*ucmDir)(nil))
	_ = (gofs.NodeCreater)((*ucmDir)(nil))
	_ = (gofs.NodeUnlinker)((*ucmDir)(nil))
	_ = (gofs.NodeMkdirer)((*ucmDir)(nil))
	_ = (gofs.NodeRmdirer)((*ucmDir)(nil))
	_ = (gofs.NodeRenamer)((*ucmDir)(nil))
	_ = (gofs.NodeStatfser)((*ucmDir)(nil))
)

// OnAdd adds the files of control's table (control.Files): a session
// file per Requests row, the stats snapshot, the link to the GPU socket,
// each with the row's inode number.
func (d *ucmDir) OnAdd(ctx context.Context) {
	for _, spec := range control.Files(d.x.Env) {
		var node gofs.InodeEmbedder
		mode := uint32(syscall.S_IFREG)
		switch spec.Kind {
		case control.Requests, control.Stream:
			node = &controlFile{Common: d.x.Host.Node(), x: d.x, spec: spec}
		case control.Snapshot:
			node = &statsFile{Common: d.x.Host.Node(), x: d.x, perm: spec.Perm}
		case control.SocketLink:
			node = &gpuSockLink{Common: d.x.Host.Node(), x: d.x, target: d.x.Env.GPUSocket().Path(), perm: spec.Perm}
			mode = syscall.S_IFLNK
		default:
			d.x.Log.Error("control file of an unknown kind", "file", spec.Name, "kind", spec.Kind)
			continue
		}
		d.AddChild(spec.Name, d.NewPersistentInode(ctx, node, gofs.StableAttr{Mode: mode, Ino: spec.Ino}), false)
	}
}

// Getattr describes the control directory.
func (d *ucmDir) Getattr(ctx context.Context, f gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	d.x.Host.DirAttr(&out.Attr, 2)
	out.SetTimeout(d.x.EntryTTL)
	return 0
}

// Mkdir is refused in the control directory.
func (d *ucmDir) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	return nil, d.x.Host.Fail("mkdir", ucmName+"/"+name, store.ErrImmutable)
}

// Rmdir is refused in the control directory.
func (d *ucmDir) Rmdir(ctx context.Context, name string) syscall.Errno {
	return d.x.Host.Fail("rmdir", ucmName+"/"+name, store.ErrImmutable)
}
