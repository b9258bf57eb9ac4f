package vfs

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/ucmfs/ucmfs/store"
)

// The user.ucm.* attributes: the store names and computes them
// (store.Attrs); these are the rules of their names and of the buffers
// they are answered in, and the requests answered by them (Getxattr,
// Setxattr, Removexattr, Listxattr, NoXattr). The adapter (fs/xattr.go)
// turns the errors into errnos and logs them: a name that is not served
// and a short buffer are plain refusals (IsPlain), since tools probe
// security.* and ACL names on every file.

// XattrPrefix is the namespace of every attribute ucmfs serves.
const XattrPrefix = "user.ucm."

// Errors of the attributes, mapped to errno in fs/errno.go.
var (
	// ErrOtherNS: a name outside user.ucm.* (ENOTSUP).
	ErrOtherNS = errors.New("attribute namespace not served")
	// ErrRange: a buffer too small for the answer (ERANGE).
	ErrRange = errors.New("attribute buffer too small")
)

// AttrName splits a full attribute name: the name after user.ucm., or
// ErrOtherNS for another namespace.
func AttrName(full string) (string, error) {
	name, ok := strings.CutPrefix(full, XattrPrefix)
	if !ok {
		return "", ErrOtherNS
	}
	return name, nil
}

// Served is the name after user.ucm. of full when x has it; else
// ErrOtherNS or store.ErrNoAttr: a name that is not served.
func Served(x *store.Attrs, full string) (string, error) {
	name, err := AttrName(full)
	if err == nil && !x.Has(name) {
		err = store.ErrNoAttr
	}
	return name, err
}

// Sized answers val in dest with the size protocol of getxattr: an
// empty dest asks for the size, a short one is ErrRange (with the size).
func Sized(val, dest []byte) (uint32, error) {
	if len(dest) == 0 {
		return uint32(len(val)), nil
	}
	if len(dest) < len(val) {
		return uint32(len(val)), ErrRange
	}
	return uint32(copy(dest, val)), nil
}

// Writable refuses a write of the attribute name of x (Served) that is
// read-only: store.ErrImmutable.
func Writable(x *store.Attrs, name string) error {
	if !x.Writable[name] {
		return fmt.Errorf("read-only attribute: %w", store.ErrImmutable)
	}
	return nil
}

// Value is the value setxattr's data writes: its text, trimmed.
func Value(data []byte) string { return strings.TrimSpace(string(data)) }

// ErrNoRemove is the error of a removal: every attribute of a table
// always exists.
var ErrNoRemove = fmt.Errorf("attributes cannot be removed: %w", store.ErrImmutable)

// Names lists the table's full names, NUL-terminated, as listxattr
// answers them.
func Names(x *store.Attrs) []byte {
	var b []byte
	for _, n := range x.Names {
		b = append(b, XattrPrefix...)
		b = append(b, n...)
		b = append(b, 0)
	}
	return b
}

// Getxattr answers a getxattr of full from x in dest (Sized).
func Getxattr(x *store.Attrs, full string, dest []byte) (uint32, error) {
	name, err := Served(x, full)
	if err != nil {
		return 0, Plain(err)
	}
	val, err := x.Get(name)
	if err != nil {
		return 0, err
	}
	return sized([]byte(val), dest)
}

// sized is Sized, a short buffer a plain refusal.
func sized(val, dest []byte) (uint32, error) {
	n, err := Sized(val, dest)
	if err != nil {
		return n, Plain(err)
	}
	return n, nil
}

// Setxattr writes a writable attribute of x; a read-only one is
// store.ErrImmutable (Writable).
func Setxattr(x *store.Attrs, full string, data []byte) error {
	name, err := Served(x, full)
	if err != nil {
		return Plain(err)
	}
	if err := Writable(x, name); err != nil {
		return err
	}
	value := Value(data)
	if err := x.Set(name, value); err != nil {
		return fmt.Errorf("value %s: %w", strconv.Quote(value), err)
	}
	return nil
}

// Removexattr: every attribute of the table always exists, so removing
// one is ErrNoRemove.
func Removexattr(x *store.Attrs, full string) error {
	if _, err := Served(x, full); err != nil {
		return Plain(err)
	}
	return ErrNoRemove
}

// Listxattr lists the table's names (Names), with the size protocol of
// getxattr.
func Listxattr(x *store.Attrs, dest []byte) (uint32, error) {
	return sized(Names(x), dest)
}

// NoXattr answers a request for the attribute full of a node without
// attributes: store.ErrNoAttr in user.ucm., else ErrOtherNS.
func NoXattr(full string) error {
	_, err := AttrName(full)
	if err == nil {
		err = store.ErrNoAttr
	}
	return Plain(err)
}
