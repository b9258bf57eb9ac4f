package store

import (
	"errors"

	"github.com/ucmfs/ucmfs/tiers"
)

// Errors of the store that have no tiers or format sentinel. The front
// end decides what each means to its caller (the FUSE adapter maps them
// to an errno in one place).
var (
	// ErrImmutable: the request would change a published file or the
	// fixed directory structure (truncate, rename, link, mkdir inside a
	// model, a setting of a model that is not empty).
	ErrImmutable = errors.New("published files and the directory structure are immutable")
	// ErrQuota: publishing the file would take its model past its quota.
	ErrQuota = errors.New("model quota exceeded")
	// ErrTooBig: the file being written passed Options.MaxFileSize.
	ErrTooBig = errors.New("file too large")
	// ErrStopped: Stop was called; the daemon is shutting down.
	ErrStopped = errors.New("the daemon is shutting down: no new writes")
	// ErrInvalid: a value (a setting, an attribute) the store cannot take.
	ErrInvalid = errors.New("invalid value")
	// ErrShutdown: the store is closing (the promotion pool stopped).
	ErrShutdown = errors.New("the mount is going away")
	// ErrInterrupted: the caller's context ended while the store waited.
	ErrInterrupted = errors.New("interrupted")
)

// ErrNotEmpty: a model or directory that still holds files cannot be
// removed (nor replaced by a directory moved over it).
var ErrNotEmpty = errors.New("not empty")

// ErrNoSidecar: a sidecar that is not stored and cannot be derived from
// its block (no layout to derive from, or derivation off for its model).
var ErrNoSidecar = errors.New("no such sidecar")

// The tier stack's sentinels, as the store returns them: the same values
// as package tiers', so a front end tests them here without importing it.
var (
	// ErrNotFound: no tier holds the file.
	ErrNotFound = tiers.ErrNotFound
	// ErrExist: the file is already published; the new copy was discarded.
	ErrExist = tiers.ErrExist
	// ErrInvalidBlock: the bytes are not a valid block (header, size).
	ErrInvalidBlock = tiers.ErrInvalid
	// ErrFull: a tier has no room for the file right now.
	ErrFull = tiers.ErrFull
	// ErrNoSpace: no tier has room: each is full of pinned or dirty data.
	ErrNoSpace = tiers.ErrNoSpace
	// ErrCorrupt: a stored file failed its CRC-32C or header check.
	ErrCorrupt = tiers.ErrCorrupt
	// ErrStalled: a directory tier did not answer in its timeout.
	ErrStalled = tiers.ErrStalled
	// ErrReadOnly: a directory tier's filesystem refused a write (EROFS).
	ErrReadOnly = tiers.ErrReadOnly
	// ErrTierFailed: a directory tier's filesystem failed a write (EIO).
	ErrTierFailed = tiers.ErrTierFailed
	// ErrClosed: the tiers were closed.
	ErrClosed = tiers.ErrClosed
)
