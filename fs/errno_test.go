package fs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/gpu"
	"github.com/ucmfs/ucmfs/store"
	"github.com/ucmfs/ucmfs/transfer"
)

// TestToErrno checks the one mapping from Go errors to errno.
func TestToErrno(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("ctx: %w", err) }
	_, nameErr := format.ParseID("xyz")
	formatErr := format.ValidateBlock(format.BlockHeader{}, format.ID{}, 10, nil)
	for _, c := range []struct {
		err   error
		want  syscall.Errno
		known bool
	}{
		{nil, 0, true},
		{store.ErrNotFound, syscall.ENOENT, true},
		{wrap(store.ErrNotFound), syscall.ENOENT, true},
		{store.ErrExist, syscall.EEXIST, true},
		{store.ErrNoSpace, syscall.ENOSPC, true},
		{fmt.Errorf("%w: %w", store.ErrNoSpace, syscall.EIO), syscall.ENOSPC, true},
		{store.ErrFull, syscall.ENOSPC, true},
		{fmt.Errorf("%w: x: %w", store.ErrInvalidBlock, formatErr), syscall.EINVAL, true},
		{formatErr, syscall.EINVAL, true},
		{nameErr, syscall.EINVAL, true},
		{store.ErrStalled, syscall.ETIMEDOUT, true},
		{store.ErrClosed, syscall.ESHUTDOWN, true},
		{store.ErrCorrupt, syscall.EIO, true},
		{store.ErrImmutable, syscall.EPERM, true},
		{wrap(store.ErrImmutable), syscall.EPERM, true},
		{store.ErrQuota, syscall.EDQUOT, true},
		{store.ErrTooBig, syscall.EFBIG, true},
		{store.ErrStopped, syscall.EROFS, true},
		{wrap(syscall.ENOTEMPTY), syscall.ENOTEMPTY, true},
		{&os.PathError{Op: "open", Path: "/x", Err: syscall.ENOSPC}, syscall.ENOSPC, true},
		{os.ErrNotExist, syscall.ENOENT, true},
		{os.ErrPermission, syscall.EACCES, true},
		{context.DeadlineExceeded, syscall.ETIMEDOUT, true},
		{context.Canceled, syscall.EINTR, true},
		{wrap(gpu.ErrWrongDevice), syscall.EXDEV, true},
		{fmt.Errorf("%w: %w", gpu.ErrReset, gpu.ErrFault), syscall.ESTALE, true},
		{wrap(gpu.ErrDeviceLost), syscall.ENXIO, true},
		{wrap(transfer.ErrNoToken), syscall.ENOENT, true},
		{wrap(transfer.ErrNoSocket), syscall.ENOTSUP, true},
		{syscall.Errno(0), syscall.EIO, false},
		{errors.New("something odd"), syscall.EIO, false},
	} {
		got, known := mapErr(c.err)
		if got != c.want || known != c.known {
			t.Errorf("%v: errno %v known %v, want %v %v", c.err, got, known, c.want, c.known)
		}
		if toErrno(c.err) != c.want {
			t.Errorf("toErrno(%v) differs from mapErr", c.err)
		}
	}
}
