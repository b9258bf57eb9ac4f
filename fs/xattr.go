package fs

import (
	"fmt"
	"strconv"
	"strings"
	"syscall"

	"github.com/ucmfs/ucmfs/store"
	"golang.org/x/sys/unix"
)

// xattrPrefix is the namespace of every attribute ucmfs serves.
const xattrPrefix = "user.ucm."

// attrName splits a full attribute name: the name after user.ucm., or
// errOtherNS for another namespace.
func attrName(full string) (string, error) {
	name, ok := strings.CutPrefix(full, xattrPrefix)
	if !ok {
		return "", errOtherNS
	}
	return name, nil
}

// getxattr answers a getxattr from the table, with the size protocol: an
// empty dest asks for the size, a short one is ERANGE.
func (s *fsState) getxattr(x *store.Attrs, path, full string, dest []byte) (uint32, syscall.Errno) {
	name, err := attrName(full)
	if err == nil && !x.Has(name) {
		err = store.ErrNoAttr
	}
	if err != nil {
		return 0, s.xattrRefused("getxattr", path, full, err)
	}
	val, err := x.Get(name)
	if err != nil {
		return 0, s.fail("getxattr", path+" "+full, err)
	}
	if len(dest) == 0 {
		return uint32(len(val)), 0
	}
	if len(dest) < len(val) {
		return uint32(len(val)), errnoRange
	}
	return uint32(copy(dest, val)), 0
}

// setxattr writes a writable attribute; a read-only one is EPERM.
func (s *fsState) setxattr(x *store.Attrs, path, full string, data []byte) syscall.Errno {
	name, err := attrName(full)
	if err == nil && !x.Has(name) {
		err = store.ErrNoAttr
	}
	if err != nil {
		return s.xattrRefused("setxattr", path, full, err)
	}
	if !x.Writable[name] {
		return s.fail("setxattr", path+" "+full, fmt.Errorf("read-only attribute: %w", store.ErrImmutable))
	}
	value := strings.TrimSpace(string(data))
	if err := x.Set(name, value); err != nil {
		return s.fail("setxattr", path+" "+full+"="+strconv.Quote(value), err)
	}
	return 0
}

// removexattr: every attribute of the table always exists, so removing
// one is EPERM.
func (s *fsState) removexattr(x *store.Attrs, path, full string) syscall.Errno {
	name, err := attrName(full)
	if err == nil && !x.Has(name) {
		err = store.ErrNoAttr
	}
	if err != nil {
		return s.xattrRefused("removexattr", path, full, err)
	}
	return s.fail("removexattr", path+" "+full, fmt.Errorf("attributes cannot be removed: %w", store.ErrImmutable))
}

// listxattr lists the table's names, NUL-terminated, with the size
// protocol of getxattr.
func listxattr(x *store.Attrs, dest []byte) (uint32, syscall.Errno) {
	var b []byte
	for _, n := range x.Names {
		b = append(b, xattrPrefix...)
		b = append(b, n...)
		b = append(b, 0)
	}
	if len(dest) == 0 {
		return uint32(len(b)), 0
	}
	if len(dest) < len(b) {
		return uint32(len(b)), errnoRange
	}
	return uint32(copy(dest, b)), 0
}

// noXattr answers a request for a node without attributes.
func (s *fsState) noXattr(op, full string) syscall.Errno {
	_, err := attrName(full)
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
