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

// xattrSet is the attribute table of one node kind: the names in listing
// order, how to read each, and which are writable.
type xattrSet struct {
	names []string
	get   func(name string) (string, error)
	set   func(name, value string) error // nil when none is writable
	rw    map[string]bool
}

// has reports whether name (without the prefix) is in the set.
func (x *xattrSet) has(name string) bool {
	for _, n := range x.names {
		if n == name {
			return true
		}
	}
	return false
}

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
func (s *fsState) getxattr(x *xattrSet, path, full string, dest []byte) (uint32, syscall.Errno) {
	name, err := attrName(full)
	if err == nil && !x.has(name) {
		err = errNoAttr
	}
	if err != nil {
		return 0, s.xattrRefused("getxattr", path, full, err)
	}
	val, err := x.get(name)
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
func (s *fsState) setxattr(x *xattrSet, path, full string, data []byte) syscall.Errno {
	name, err := attrName(full)
	if err == nil && !x.has(name) {
		err = errNoAttr
	}
	if err != nil {
		return s.xattrRefused("setxattr", path, full, err)
	}
	if !x.rw[name] {
		return s.fail("setxattr", path+" "+full, fmt.Errorf("read-only attribute: %w", store.ErrImmutable))
	}
	value := strings.TrimSpace(string(data))
	if err := x.set(name, value); err != nil {
		return s.fail("setxattr", path+" "+full+"="+strconv.Quote(value), err)
	}
	return 0
}

// removexattr: every attribute of the table always exists, so removing
// one is EPERM.
func (s *fsState) removexattr(x *xattrSet, path, full string) syscall.Errno {
	name, err := attrName(full)
	if err == nil && !x.has(name) {
		err = errNoAttr
	}
	if err != nil {
		return s.xattrRefused("removexattr", path, full, err)
	}
	return s.fail("removexattr", path+" "+full, fmt.Errorf("attributes cannot be removed: %w", store.ErrImmutable))
}

// listxattr lists the table's names, NUL-terminated, with the size
// protocol of getxattr.
func listxattr(x *xattrSet, dest []byte) (uint32, syscall.Errno) {
	var b []byte
	for _, n := range x.names {
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
		err = errNoAttr
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

// parseBool parses a 0/1 attribute value.
func parseBool(v string) (bool, error) {
	switch v {
	case "0":
		return false, nil
	case "1":
		return true, nil
	}
	return false, fmt.Errorf("value %q is not 0 or 1: %w", v, store.ErrInvalid)
}

// parseBytes parses a non-negative decimal byte count.
func parseBytes(v string) (int64, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("value %q is not a byte count: %w", v, store.ErrInvalid)
	}
	return n, nil
}
