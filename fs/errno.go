package fs

import (
	"context"
	"errors"
	iofs "io/fs"
	"syscall"

	"github.com/ucmfs/ucmfs/control"
	"github.com/ucmfs/ucmfs/control/line"
	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/fs/filesdir"
	"github.com/ucmfs/ucmfs/fs/pending"
	"github.com/ucmfs/ucmfs/fs/scratch"
	"github.com/ucmfs/ucmfs/gpu"
	"github.com/ucmfs/ucmfs/store"
	"github.com/ucmfs/ucmfs/transfer"
	"github.com/ucmfs/ucmfs/vfs"
	"golang.org/x/sys/unix"
)

// The plain answers nodes give with no error to log (a lookup's miss, an
// existing name), named by what they mean; this file decides their errno.
const (
	errnoMissing = syscall.ENOENT  // no such name
	errnoExists  = syscall.EEXIST  // the name exists
	errnoNotDir  = syscall.ENOTDIR // a file where a directory was asked for
	errnoBadFD   = syscall.EBADF   // a descriptor that cannot do what is asked
	errnoBadOff  = syscall.EINVAL  // a directory offset past its listing
	// errnoStale: a node that no longer stands for its name (a file
	// published between the lookup that found it being written and the
	// open): the kernel looks the name up again and opens once more.
	errnoStale = syscall.ESTALE
	// errnoNoTmpfile: O_TMPFILE outside a files model, as a filesystem
	// without it answers.
	errnoNoTmpfile = syscall.EOPNOTSUPP
	// errnoNoLock: a POSIX lock request, which the mount does not claim
	// (vfs/flock.go; the kernel keeps those).
	errnoNoLock = syscall.ENOTSUP
)

// pendingErrnos are the plain answers of the files being written
// (package fs/pending).
var pendingErrnos = pending.Errnos{Stale: errnoStale, BadFD: errnoBadFD}

// filesDirErrnos are the plain answers of the directories of files
// models (package fs/filesdir).
var filesDirErrnos = filesdir.Errnos{Missing: errnoMissing, Exists: errnoExists, NotDir: errnoNotDir, BadOff: errnoBadOff}

// scratchErrnos are the plain answers of the private entries of ucm-posix
// models (package fs/scratch).
var scratchErrnos = scratch.Errnos{
	// A private entry past its size bound (scratch.MaxFile).
	TooBig: syscall.EFBIG,
	// A symlink, hard link or device node among them: they are plain
	// files and directories.
	NoSpecial: syscall.EPERM,
	// copy_file_range into a private file, which the kernel then does as
	// writes, each admitted by the budget.
	NoCopy: syscall.EOPNOTSUPP,
}

// errnoRule is one line of the mapping table: errors.Is(err, target)
// gives errno.
type errnoRule struct {
	target error
	errno  syscall.Errno
}

// errnoRules map the sentinels of tiers, format and gpu, first match wins.
// With osRules they are the only place where an error becomes an errno
// (see toErrno).
var errnoRules = []errnoRule{
	{format.ErrNameTooLong, syscall.ENAMETOOLONG}, // before the rules of what may wrap it
	{vfs.ErrReadOnly, syscall.EACCES},
	{store.ErrNoAttr, syscall.ENODATA},
	{vfs.ErrOtherNS, syscall.ENOTSUP},
	{vfs.ErrRange, syscall.ERANGE},
	{vfs.ErrCrossDir, syscall.EXDEV},
	{vfs.ErrIsDir, syscall.EISDIR},
	{vfs.ErrNotDir, syscall.ENOTDIR},
	{vfs.ErrUserBudget, syscall.EMFILE},
	{vfs.ErrFullBudget, syscall.ENFILE},
	{store.ErrImmutable, syscall.EPERM},
	{store.ErrNotOwner, syscall.EPERM},
	{store.ErrQuota, syscall.EDQUOT},
	{store.ErrPendingFull, syscall.ENOSPC},
	{store.ErrTooBig, syscall.EFBIG},
	{store.ErrStopped, syscall.EROFS},
	{store.ErrInvalid, syscall.EINVAL},
	{store.ErrNotEmpty, syscall.ENOTEMPTY},
	{store.ErrDirTooLarge, syscall.EXDEV},
	{store.ErrBusy, syscall.EBUSY},
	{store.ErrShutdown, syscall.ESHUTDOWN},
	{store.ErrInterrupted, syscall.EINTR},
	{vfs.ErrFlockBusy, syscall.EWOULDBLOCK},
	{vfs.ErrFlockInterrupted, syscall.EINTR},
	{vfs.ErrFlockNoEntry, syscall.ENOLCK},
	{line.ErrInvalid, syscall.EINVAL},
	{line.ErrTooMany, syscall.E2BIG},
	{transfer.ErrBadRegion, syscall.EBADF},
	{transfer.ErrTooManyRegions, syscall.EMFILE},
	{transfer.ErrTooManyConns, syscall.EMFILE},
	{control.ErrBackpressure, syscall.ENOBUFS},
	{line.ErrAccess, syscall.EACCES},
	{control.ErrSessions, syscall.EMFILE},
	{control.ErrNoMemory, syscall.ENOMEM},
	{transfer.ErrNoToken, syscall.ENOENT},
	{transfer.ErrNoSocket, syscall.ENOTSUP},
	{store.ErrInvalidBlock, syscall.EINVAL},
	{format.ErrFormat, syscall.EINVAL},
	{format.ErrName, syscall.EINVAL},
	{store.ErrNotFound, syscall.ENOENT},
	{store.ErrExist, syscall.EEXIST},
	{store.ErrReadOnly, syscall.EROFS},
	{store.ErrTierFailed, syscall.EIO},
	{store.ErrNoSpace, syscall.ENOSPC},
	{store.ErrFull, syscall.ENOSPC},
	{store.ErrStalled, syscall.ETIMEDOUT},
	{store.ErrClosed, syscall.ESHUTDOWN},
	{store.ErrCorrupt, syscall.EIO},
	// Before the other gpu rules: a reset or a wrong GPU may wrap a
	// driver error that matches one of them.
	{gpu.ErrWrongDevice, syscall.EXDEV},
	{gpu.ErrReset, syscall.ESTALE},
	{gpu.ErrDeviceLost, syscall.ENXIO},
	{gpu.ErrBounds, syscall.EINVAL},
	{gpu.ErrSize, syscall.EINVAL},
	{gpu.ErrBadHandle, syscall.EINVAL},
	{gpu.ErrMode, syscall.EINVAL},
	{gpu.ErrNoDevice, syscall.ENODEV},
	{gpu.ErrFault, syscall.EFAULT},
	{gpu.ErrClosed, syscall.ESHUTDOWN},
	// Last, where the errno of a wrapped error used to win over it.
	{store.ErrNoSidecar, syscall.ENOENT},
}

// osRules apply after a syscall.Errno in the chain was looked for: they
// catch errors of the os and context packages that carry none.
var osRules = []errnoRule{
	{iofs.ErrNotExist, syscall.ENOENT},
	{iofs.ErrExist, syscall.EEXIST},
	{iofs.ErrPermission, syscall.EACCES},
	{context.DeadlineExceeded, syscall.ETIMEDOUT},
	{context.Canceled, syscall.EINTR},
}

// toErrno turns an error into the errno the kernel returns to the caller:
// the sentinels of tiers and format first (they are more specific than an
// OS error a tier wraps with them), then a syscall.Errno anywhere in the
// chain as it is, then the os and context errors. An error that matches
// nothing is EIO; mapErr reports it as unexpected so the caller logs it.
func toErrno(err error) syscall.Errno {
	e, _ := mapErr(err)
	return e
}

// errName names the errno of err ("EINVAL"), for the answer lines of the
// control files, and tells whether err was an expected error.
func errName(err error) (string, bool) {
	e, known := mapErr(err)
	return unix.ErrnoName(e), known
}

// mapErr is toErrno, also telling whether err was an expected error.
func mapErr(err error) (errno syscall.Errno, known bool) {
	if err == nil {
		return 0, true
	}
	for _, r := range errnoRules {
		if errors.Is(err, r.target) {
			return r.errno, true
		}
	}
	var e syscall.Errno
	if errors.As(err, &e) && e != 0 {
		return e, true
	}
	for _, r := range osRules {
		if errors.Is(err, r.target) {
			return r.errno, true
		}
	}
	return syscall.EIO, false
}
