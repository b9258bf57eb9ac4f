package store

import "errors"

// Errors of the store that have no tiers or hashdir sentinel. The front
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

// ErrNotEmpty: a model that still holds files cannot be removed.
var ErrNotEmpty = errors.New("model not empty")

// ErrNoSidecar: a sidecar that is not stored and cannot be derived from
// its block (no layout to derive from, or derivation off for its model).
var ErrNoSidecar = errors.New("no such sidecar")
