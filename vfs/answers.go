package vfs

import (
	"errors"

	"github.com/ucmfs/ucmfs/store"
)

// Errors of the requests' decisions, mapped to errno in fs/errno.go.
var (
	// ErrReadOnly: a write open of a published file, or a read open of one
	// being written (EACCES).
	ErrReadOnly = errors.New("read-only")
	// ErrCrossDir: a rename out of its directory (EXDEV: tools copy then).
	ErrCrossDir = errors.New("rename across directories")
	// ErrIsDir: a file request on a directory of a files model (EISDIR).
	ErrIsDir = errors.New("is a directory")
)

// Plain refusals: the ordinary outcome of a request (a miss, a name that
// exists, a file where a directory was asked for), which the adapter
// answers with no warning (IsPlain). ErrNoEntry and ErrExists wrap the
// store's sentinels and map as those.
var (
	// ErrNoEntry: no such name (ENOENT).
	ErrNoEntry = Plain(store.ErrNotFound)
	// ErrExists: the name exists (EEXIST).
	ErrExists = Plain(store.ErrExist)
	// ErrNotDir: a file where a directory was asked for (ENOTDIR).
	ErrNotDir = Plain(errors.New("not a directory"))
)

// PlainError is a plain refusal (ErrNoEntry, ErrExists, ErrNotDir,
// Plain).
type PlainError struct{ err error }

// Plain makes err a plain refusal, mapped as err.
func Plain(err error) error { return &PlainError{err} }

// Error says what was refused.
func (e *PlainError) Error() string { return e.err.Error() }

// Unwrap is the sentinel it maps as.
func (e *PlainError) Unwrap() error { return e.err }

// IsPlain reports whether err is a plain refusal.
func IsPlain(err error) bool {
	var p *PlainError
	return errors.As(err, &p)
}
