// Package posix is the ucm-posix layout (docs/spec.md §2): UCM
// PosixStore's own names, <model>/<shard>/<id> holding the raw payload
// with no header, where <shard> is the first W hex characters of the id
// (W = 1..4) or the single directory "data" (W = 0), made by the store's
// own mkdir (format/raw.go). The width is part of a key's kind, so the
// same id under two widths names two files. A name is its block's
// content: a second publish of it is a copy, dropped.
package posix
