package faultfs

import (
	"fmt"
	"syscall"
	"time"
)

// Op classifies the operations the filesystem receives, for Fault rules and
// for Calls. Each names the system calls that reach it.
type Op int

// The operation kinds.
const (
	// OpAny matches every operation in a Fault; Calls(OpAny) is the total.
	OpAny Op = iota
	// OpStat: name lookup, stat(2), fstat(2), statx(2).
	OpStat
	// OpOpen: open(2) of an existing file.
	OpOpen
	// OpCreate: open(2) with O_CREAT of a new name, O_TMPFILE, mknod(2).
	OpCreate
	// OpRead: read(2), pread(2), readlink(2), and the source of
	// copy_file_range(2).
	OpRead
	// OpWrite: write(2), pwrite(2), and the target of copy_file_range(2).
	OpWrite
	// OpAllocate: fallocate(2).
	OpAllocate
	// OpFlush: close(2) of a descriptor (every close, dup'ed ones included).
	OpFlush
	// OpFsync: fsync(2) and fdatasync(2) of a file or a directory.
	OpFsync
	// OpSetattr: truncate(2), chmod(2), chown(2), utimes(2).
	OpSetattr
	// OpRename: rename(2) and renameat2(2), any flags. The rule's
	// PathContains may match either name.
	OpRename
	// OpUnlink: unlink(2) of a file.
	OpUnlink
	// OpRmdir: rmdir(2).
	OpRmdir
	// OpMkdir: mkdir(2).
	OpMkdir
	// OpLink: link(2) and symlink(2).
	OpLink
	// OpReaddir: opening a directory for reading, and each entry read
	// from it (getdents(2)).
	OpReaddir
	// OpGetxattr: getxattr(2) and listxattr(2).
	OpGetxattr
	// OpSetxattr: setxattr(2) and removexattr(2).
	OpSetxattr
	// OpStatfs: statfs(2).
	OpStatfs

	numOps
)

var opNames = [numOps]string{
	OpAny: "any", OpStat: "stat", OpOpen: "open", OpCreate: "create",
	OpRead: "read", OpWrite: "write", OpAllocate: "allocate",
	OpFlush: "flush", OpFsync: "fsync", OpSetattr: "setattr",
	OpRename: "rename", OpUnlink: "unlink", OpRmdir: "rmdir",
	OpMkdir: "mkdir", OpLink: "link", OpReaddir: "readdir",
	OpGetxattr: "getxattr", OpSetxattr: "setxattr", OpStatfs: "statfs",
}

// String returns the operation's lower-case name, e.g. "write".
func (o Op) String() string {
	if o >= 0 && o < numOps {
		return opNames[o]
	}
	return fmt.Sprintf("Op(%d)", int(o))
}

// Fault is one injection rule. It matches an operation of kind Op (every
// kind for OpAny) whose path, relative to the mount point and without a
// leading slash ("" for the root), contains PathContains; an empty
// PathContains matches every path. For operations on a name in a directory
// (lookup, create, unlink, mkdir, rename, ...) the path is that of the name.
//
// A matched operation fails with Errno. With Stall set it first blocks the
// calling system call until Clear or Unmount, then fails with Errno, or
// completes normally when Errno is zero. With Delay set it first waits
// that long (a network filesystem's round trip), then goes on the same
// way; a rule with a Delay alone lets the rules after it match too.
//
// With Times > 0 the rule applies to that many operations, then lapses
// (a one-off fault: an interrupted call, EINTR, that succeeds when made
// again); with Times 0 it applies until Clear.
type Fault struct {
	Op           Op
	Errno        syscall.Errno
	Stall        bool
	Delay        time.Duration
	PathContains string
	Times        int
}

// String describes the rule for test failure messages.
func (fl Fault) String() string {
	s := fl.Op.String()
	if fl.PathContains != "" {
		s += fmt.Sprintf(" on *%s*", fl.PathContains)
	}
	if fl.Stall {
		s += " stall"
	}
	if fl.Delay > 0 {
		s += " delay " + fl.Delay.String()
	}
	if fl.Errno != 0 {
		s += " " + fl.Errno.Error()
	}
	if fl.Times > 0 {
		s += fmt.Sprintf(" %d times", fl.Times)
	}
	return s
}
