package vfs

import (
	"errors"
	"fmt"
	"time"

	"github.com/ucmfs/ucmfs/store"
)

// The decisions of a setattr (docs/semantics.md, "Owners"): what a
// directory, a model or a file being written lets change. The adapter
// reads the kernel's request into a SetAttr, fills the attributes it
// answers, and turns the errors into errnos.

// SetAttr is what a setattr asks to change: nil for what it leaves.
type SetAttr struct {
	Size  *int64
	MTime *time.Time
	Mode  *uint32 // permission bits and file type, as the request gives them
	UID   *uint32
	GID   *uint32
}

// SameAttr decides a setattr of a directory whose owner and mode are cur:
// only a change of nothing but times is accepted; else ErrImmutable,
// with the operation (setattr, chmod, chown, chgrp) to log it under. With
// anyMode (a raw shard: UCM chmods the shards it makes, and ignores the
// result) any chmod is accepted and changes nothing.
func SameAttr(sa SetAttr, cur store.ModelOwner, anyMode bool) (op string, err error) {
	if sa.Size != nil {
		return "setattr", store.ErrImmutable
	}
	if sa.Mode != nil && *sa.Mode&0o7777 != cur.Mode&0o7777 && !anyMode {
		return "chmod", fmt.Errorf("this directory is %o: %w", cur.Mode&0o7777, store.ErrImmutable)
	}
	if sa.UID != nil && *sa.UID != cur.Uid {
		return "chown", store.ErrImmutable
	}
	if sa.GID != nil && *sa.GID != cur.Gid {
		return "chgrp", store.ErrImmutable
	}
	return "", nil
}

// SetModelOwner applies a setattr of model's directory by user caller:
// chmod by its owner or root, chown to another user by root, chgrp by its
// owner (to a group the kernel lets it choose) or root, kept across
// restarts; new times change nothing. The kernel checked the caller first
// (default_permissions); the same rules are applied here, so they hold
// without it. changed reports a new owner or mode; err comes with the
// operation to log it under.
func SetModelOwner(m store.Models, model string, caller uint32, sa SetAttr) (changed bool, op string, err error) {
	if sa.Size != nil {
		return false, "setattr", store.ErrImmutable
	}
	o := m.Owner(model)
	next := o
	if sa.Mode != nil {
		next.Mode = *sa.Mode & 0o7777
	}
	if sa.UID != nil {
		next.Uid = *sa.UID
	}
	if sa.GID != nil {
		next.Gid = *sa.GID
	}
	if next == o {
		return false, "", nil
	}
	if err := m.CheckOwner(model, caller); err != nil {
		return false, "setattr", err
	}
	if next.Uid != o.Uid && caller != 0 {
		return false, "chown", fmt.Errorf("only root gives a model away: %w", store.ErrNotOwner)
	}
	if err := m.SetOwner(model, next); err != nil {
		return false, "setattr", err
	}
	return true, "", nil
}

// SetWriting applies a setattr to a file being written: a new size
// (ftruncate, within MaxFileSize) and new times (kept as the published
// mtime) apply; chmod and chown are accepted and change nothing (a
// published file is always 0444). When w was published before the change
// took, it changes nothing and reports published, with no error.
func SetWriting(w *store.Draft, sa SetAttr) (published bool, err error) {
	if err := w.Setattr(sa.Size, sa.MTime); err != nil {
		if errors.Is(err, store.ErrImmutable) && !w.Writable() {
			return true, nil
		}
		return false, err
	}
	return false, nil
}

// ErrPublished is the error of a change of a file being written that
// published meanwhile.
var ErrPublished = fmt.Errorf("already published: %w", store.ErrImmutable)
