package fs

import (
	"context"
	"os"

	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/ucmfs/ucmfs/control/line"
)

// controlCreds captures the credentials of the process that opens a
// control file, checked against the files' rule (control.Access.Capture):
// the session keeps them, and its requests are checked as them whoever
// writes the descriptor later. paths: the file's requests name paths
// (control.File.Paths). An open from inside the daemon (no caller) is the
// daemon's own.
func (s *fsState) controlCreds(ctx context.Context, paths bool) (*line.Creds, error) {
	return s.control.Capture(requestCaller(ctx), paths)
}

// requestCaller is the sender of the request ctx carries, as the kernel
// names it; the daemon itself for a request from inside it.
func requestCaller(ctx context.Context) line.Caller {
	if c, ok := fuse.FromContext(ctx); ok {
		return line.Caller{Uid: c.Uid, Gid: c.Gid, Pid: c.Pid}
	}
	return line.Caller{Uid: uint32(os.Geteuid()), Gid: uint32(os.Getegid()), Pid: uint32(os.Getpid())}
}
