package fs

import (
	"context"
	"os"

	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/ucmfs/ucmfs/control"
	"github.com/ucmfs/ucmfs/store"
)

// Who sends a request: the kernel gives the thread; the store's rules
// (who publishes a file, who sees a staging file) need its process.

// callerProc returns the process of the request ctx carries; a request
// from inside the daemon (no caller) is the daemon's.
func callerProc(ctx context.Context) store.Proc {
	c, ok := fuse.FromContext(ctx)
	if !ok {
		return store.Proc{Tgid: uint32(os.Getpid()), Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid())}
	}
	return store.Proc{Tgid: control.Tgid(c.Pid), Uid: c.Uid, Gid: c.Gid}
}

// callerUid returns the user of the request ctx carries (the daemon's
// for a request from inside it): callerProc's Uid without the look for
// the thread's process, which costs a system call.
func callerUid(ctx context.Context) uint32 {
	if c, ok := fuse.FromContext(ctx); ok {
		return c.Uid
	}
	return uint32(os.Getuid())
}
