package fs

import (
	"context"
	"errors"
	iofs "io/fs"
	"syscall"

	"github.com/ucmfs/ucmfs/gpu"
	"github.com/ucmfs/ucmfs/hashdir"
	"github.com/ucmfs/ucmfs/tiers"
)

// Errors of this package that have no tiers or hashdir sentinel. Each
// wraps the errno it stands for, so toErrno needs no special case.
var (
	// errImmutable: the request would change a published file or the fixed
	// directory structure (truncate, rename, link, symlink, mknod, mkdir
	// inside a model).
	errImmutable = syscall.EPERM
	// errQuota: publishing the file would take its model past its quota.
	errQuota = syscall.EDQUOT
	// errTooBig: the file being written passed Options.MaxFileSize.
	errTooBig = syscall.EFBIG
	// errStopped: StopWrites was called; the daemon is shutting down.
	errStopped = syscall.EROFS
)

// errnoRule is one line of the mapping table: errors.Is(err, target)
// gives errno.
type errnoRule struct {
	target error
	errno  syscall.Errno
}

// errnoRules map the sentinels of tiers, hashdir and gpu, first match wins.
// With osRules they are the only place where an error becomes an errno
// (see toErrno).
var errnoRules = []errnoRule{
	{tiers.ErrInvalid, syscall.EINVAL},
	{hashdir.ErrFormat, syscall.EINVAL},
	{hashdir.ErrName, syscall.EINVAL},
	{tiers.ErrNotFound, syscall.ENOENT},
	{tiers.ErrExist, syscall.EEXIST},
	{tiers.ErrNoSpace, syscall.ENOSPC},
	{tiers.ErrFull, syscall.ENOSPC},
	{tiers.ErrStalled, syscall.ETIMEDOUT},
	{tiers.ErrClosed, syscall.ESHUTDOWN},
	{tiers.ErrCorrupt, syscall.EIO},
	{gpu.ErrBounds, syscall.EINVAL},
	{gpu.ErrSize, syscall.EINVAL},
	{gpu.ErrBadHandle, syscall.EINVAL},
	{gpu.ErrMode, syscall.EINVAL},
	{gpu.ErrNoDevice, syscall.ENODEV},
	{gpu.ErrFault, syscall.EFAULT},
	{gpu.ErrClosed, syscall.ESHUTDOWN},
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
// the sentinels of tiers and hashdir first (they are more specific than an
// OS error a tier wraps with them), then a syscall.Errno anywhere in the
// chain as it is, then the os and context errors. An error that matches
// nothing is EIO; mapErr reports it as unexpected so the caller logs it.
func toErrno(err error) syscall.Errno {
	e, _ := mapErr(err)
	return e
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
