package ucmdir

import (
	"context"
	"os"
	"slices"
	"strings"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/ucmfs/ucmfs/control"
	"github.com/ucmfs/ucmfs/control/line"
)

// creds captures the credentials of the process that opens a
// control file, checked against the files' rule (control.Access.Capture):
// the session keeps them, and its requests are checked as them whoever
// writes the descriptor later. paths: the file's requests name paths
// (control.File.Paths). An open from inside the daemon (no caller) is the
// daemon's own.
func (x *Config) creds(ctx context.Context, paths bool) (*line.Creds, error) {
	return x.Access.Capture(requestCaller(ctx), paths)
}

// requestCaller is the sender of the request ctx carries, as the kernel
// names it; the daemon itself for a request from inside it.
func requestCaller(ctx context.Context) line.Caller {
	if c, ok := fuse.FromContext(ctx); ok {
		return line.Caller{Uid: c.Uid, Gid: c.Gid, Pid: c.Pid}
	}
	return line.Caller{Uid: uint32(os.Geteuid()), Gid: uint32(os.Getegid()), Pid: uint32(os.Getpid())}
}

// Readdir lists .ucm: its dots, then its files by name.
func (d *ucmDir) Readdir(ctx context.Context) (gofs.DirStream, syscall.Errno) {
	ents := []fuse.DirEntry{
		{Name: ".", Mode: syscall.S_IFDIR, Ino: control.DirIno},
		{Name: "..", Mode: syscall.S_IFDIR, Ino: control.RootIno},
	}
	for name, ch := range d.Children() {
		st := ch.StableAttr()
		ents = append(ents, fuse.DirEntry{Name: name, Mode: st.Mode, Ino: st.Ino})
	}
	slices.SortFunc(ents[2:], func(a, b fuse.DirEntry) int { return strings.Compare(a.Name, b.Name) })
	return gofs.NewListDirStream(ents), 0
}

var _ = (gofs.NodeReaddirer)((*ucmDir)(nil))
