package fs

import (
	"context"

	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/ucmfs/ucmfs/control/line"
)

// controlAllowed checks the caller of a request on a control file
// (control.Access); a request from inside the daemon passes.
func (s *fsState) controlAllowed(ctx context.Context) error {
	c, ok := fuse.FromContext(ctx)
	if !ok {
		return nil
	}
	return s.control.Allowed(line.Caller{Uid: c.Uid, Gid: c.Gid, Pid: c.Pid})
}
