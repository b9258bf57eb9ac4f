package control

import (
	"context"
	"fmt"
	"os"
	"os/user"
	"strconv"

	"github.com/ucmfs/ucmfs/control/line"
)

// Access is who may use the session control files: the mounting user
// and root always; with a control group, its members too.
type Access struct {
	Perm  uint32 // the files' mode: 0600, or 0660 with a group
	Gid   uint32 // the files' group: the control group, else the mounting user's
	Group bool   // members of Gid may use the files
	uid   uint32 // the mounting user
}

// ResolveGroup turns a group name or numeric id into a gid.
func ResolveGroup(name string) (uint32, error) {
	if n, err := strconv.ParseUint(name, 10, 32); err == nil {
		return uint32(n), nil
	}
	g, err := user.LookupGroup(name)
	if err != nil {
		return 0, fmt.Errorf("control group %q: %w", name, err)
	}
	n, err := strconv.ParseUint(g.Gid, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("control group %q: gid %q: %w", name, g.Gid, err)
	}
	return uint32(n), nil
}

// NewAccess is the access rule of a mount by uid (primary group gid)
// with the control group group ("" for none). A group that does not
// resolve (the mount refuses it first) leaves the files 0600.
func NewAccess(group string, uid, gid uint32) Access {
	a := Access{Perm: 0o600, Gid: gid, uid: uid}
	if group == "" {
		return a
	}
	if g, err := ResolveGroup(group); err == nil {
		a = Access{Perm: 0o660, Gid: g, Group: true, uid: uid}
	}
	return a
}

// Allowed checks the opener of a control file: the mounting user, root,
// and members of the control group (by the opener's primary or a
// supplementary group) may use the files; anyone else gets
// line.ErrAccess (the FUSE mount does not ask the kernel to check modes
// here, and only a mount with allow_other lets other users reach the
// files at all).
func (a Access) Allowed(c *line.Creds) error {
	if c.Uid == 0 || c.Uid == a.uid {
		return nil
	}
	if a.Group && c.InGroup(a.Gid) {
		return nil
	}
	return line.ErrAccess
}

// Capture takes the credentials of the process c names, which opens a
// control file (line.Caller.Capture), and checks them (Allowed). With
// paths (a file whose requests name paths, File.Paths) they hold the
// opener's root and working directory too, when the daemon is root: a
// daemon of one user resolves such paths as itself (package transfer).
// The session that keeps them closes them.
func (a Access) Capture(c line.Caller, paths bool) (*line.Creds, error) {
	cr, err := c.Capture(paths && os.Geteuid() == 0)
	if err != nil {
		return nil, err
	}
	if err := a.Allowed(cr); err != nil {
		cr.Close()
		return nil, err
	}
	return cr, nil
}

// callerUID is the uid ctx's requests are checked as (their session's
// opener), the daemon's for a request from inside it.
func callerUID(ctx context.Context) uint32 {
	if c, ok := line.CredsOf(ctx); ok {
		return c.Uid
	}
	return uint32(os.Getuid())
}
