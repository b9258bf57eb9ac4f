package fs

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/user"
	"strconv"

	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/ucmfs/ucmfs/control"
)

// controlAccess is who may open the session control files: the mounting
// user and root always; with a control group, its members too.
type controlAccess struct {
	perm  uint32 // 0600, or 0660 with a group
	gid   uint32 // the files' group: the control group, else the mounting user's
	group bool   // members of gid may open the files
}

// resolveGroup turns a group name or numeric id into a gid.
func resolveGroup(name string) (uint32, error) {
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

// newControlAccess applies Options.ControlGroup. A group that does not
// resolve (Mount has refused it already) leaves the files 0600.
func newControlAccess(group string, gid uint32) controlAccess {
	a := controlAccess{perm: 0o600, gid: gid}
	if group == "" {
		return a
	}
	if g, err := resolveGroup(group); err == nil {
		a = controlAccess{perm: 0o660, gid: g, group: true}
	}
	return a
}

// controlAllowed checks the caller of a request on a control file. The
// mount does not ask the kernel to check modes (no default_permissions),
// so the daemon checks them here: the mounting user, root, and members of
// the control group (the caller's group, or a supplementary group of its
// thread) may use the files; anyone else gets control.ErrAccess (EACCES). Only a mount with
// allow_other lets other users reach the files at all.
func (s *fsState) controlAllowed(ctx context.Context) error {
	c, ok := fuse.FromContext(ctx)
	if !ok {
		return nil // called from inside the daemon, not through the kernel
	}
	if c.Uid == 0 || c.Uid == s.uid {
		return nil
	}
	a := s.control
	if a.group && (c.Gid == a.gid || inGroup(c.Pid, a.gid)) {
		return nil
	}
	return control.ErrAccess
}

// inGroup reports whether process (thread) pid has gid among its
// supplementary groups (the Groups: line of /proc/<pid>/status).
func inGroup(pid uint32, gid uint32) bool {
	if pid == 0 {
		return false
	}
	f, err := os.Open("/proc/" + strconv.FormatUint(uint64(pid), 10) + "/status")
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := bytes.CutPrefix(sc.Bytes(), []byte("Groups:"))
		if !ok {
			continue
		}
		for _, g := range bytes.Fields(rest) {
			if n, err := strconv.ParseUint(string(g), 10, 32); err == nil && uint32(n) == gid {
				return true
			}
		}
		return false
	}
	return false
}
