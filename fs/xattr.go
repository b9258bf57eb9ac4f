package fs

import (
	"strconv"
	"syscall"

	"github.com/ucmfs/ucmfs/store"
	"github.com/ucmfs/ucmfs/vfs"
	"golang.org/x/sys/unix"
)

// getxattr answers a getxattr from the table, with the size protocol
// (vfs.Sized).
func (s *fsState) getxattr(x *store.Attrs, path, full string, dest []byte) (uint32, syscall.Errno) {
	name, err := vfs.Served(x, full)
	if err != nil {
		return 0, s.xattrRefused("getxattr", path, full, err)
	}
	val, err := x.Get(name)
	if err != nil {
		return 0, s.fail("getxattr", path+" "+full, err)
	}
	return sized([]byte(val), dest)
}

// sized answers val in dest (vfs.Sized): a short buffer is ERANGE, with
// nothing logged.
func sized(val, dest []byte) (uint32, syscall.Errno) {
	n, err := vfs.Sized(val, dest)
	if err != nil {
		return n, toErrno(err)
	}
	return n, 0
}

// setxattr writes a writable attribute; a read-only one is EPERM.
func (s *fsState) setxattr(x *store.Attrs, path, full string, data []byte) syscall.Errno {
	name, err := vfs.Served(x, full)
	if err != nil {
		return s.xattrRefused("setxattr", path, full, err)
	}
	if err := vfs.Writable(x, name); err != nil {
		return s.fail("setxattr", path+" "+full, err)
	}
	value := vfs.Value(data)
	if err := x.Set(name, value); err != nil {
		return s.fail("setxattr", path+" "+full+"="+strconv.Quote(value), err)
	}
	return 0
}

// removexattr: every attribute of the table always exists, so removing
// one is EPERM.
func (s *fsState) removexattr(x *store.Attrs, path, full string) syscall.Errno {
	if _, err := vfs.Served(x, full); err != nil {
		return s.xattrRefused("removexattr", path, full, err)
	}
	return s.fail("removexattr", path+" "+full, vfs.ErrNoRemove)
}

// listxattr lists the table's names (vfs.Names), with the size protocol
// of getxattr.
func listxattr(x *store.Attrs, dest []byte) (uint32, syscall.Errno) {
	return sized(vfs.Names(x), dest)
}

// noXattr answers a request for a node without attributes.
func (s *fsState) noXattr(op, full string) syscall.Errno {
	_, err := vfs.AttrName(full)
	if err == nil {
		err = store.ErrNoAttr
	}
	return s.xattrRefused(op, "", full, err)
}

// xattrRefused logs, at debug level (tools probe security.* and ACL names
// on every file), a name that is not served, and returns its errno.
func (s *fsState) xattrRefused(op, path, full string, err error) syscall.Errno {
	errno := toErrno(err)
	s.log.Debug("xattr refused", "op", op, "path", path, "name", full, "errno", unix.ErrnoName(errno))
	return errno
}
