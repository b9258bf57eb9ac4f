package fs

import (
	"syscall"

	"github.com/ucmfs/ucmfs/store"
	"github.com/ucmfs/ucmfs/vfs"
	"golang.org/x/sys/unix"
)

// The user.ucm.* requests, answered by vfs (vfs/xattr.go) from a node's
// attribute table (store.Attrs).

// getxattr answers a getxattr from the table (vfs.Getxattr).
func (s *fsState) getxattr(x *store.Attrs, path, full string, dest []byte) (uint32, syscall.Errno) {
	n, err := vfs.Getxattr(x, full, dest)
	return n, s.xattrAnswer("getxattr", path, full, err)
}

// setxattr writes a writable attribute; a read-only one is EPERM
// (vfs.Setxattr).
func (s *fsState) setxattr(x *store.Attrs, path, full string, data []byte) syscall.Errno {
	return s.xattrAnswer("setxattr", path, full, vfs.Setxattr(x, full, data))
}

// removexattr: every attribute of the table always exists, so removing
// one is EPERM (vfs.Removexattr).
func (s *fsState) removexattr(x *store.Attrs, path, full string) syscall.Errno {
	return s.xattrAnswer("removexattr", path, full, vfs.Removexattr(x, full))
}

// listxattr lists the table's names (vfs.Listxattr).
func (s *fsState) listxattr(x *store.Attrs, dest []byte) (uint32, syscall.Errno) {
	n, err := vfs.Listxattr(x, dest)
	return n, s.xattrAnswer("listxattr", "", "", err)
}

// noXattr answers a request for a node without attributes
// (vfs.NoXattr).
func (s *fsState) noXattr(op, full string) syscall.Errno {
	return s.xattrAnswer(op, "", full, vfs.NoXattr(full))
}

// xattrAnswer answers a request for the attribute full of path that err
// refused: a plain refusal (a name that is not served, a short buffer)
// with one line at debug level (tools probe security.* and ACL names on
// every file), any other as fail does.
func (s *fsState) xattrAnswer(op, path, full string, err error) syscall.Errno {
	if err == nil || !vfs.IsPlain(err) {
		return s.refuse(op, path+" "+full, err)
	}
	errno := toErrno(err)
	s.log.Debug("xattr refused", "op", op, "path", path, "name", full, "errno", unix.ErrnoName(errno))
	return errno
}
