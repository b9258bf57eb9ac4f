package vfs

import (
	"fmt"
	"time"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/store"
)

// The lookup, making and removal of a model directory at the mount's root
// (fs/root.go serves the requests by them).

// FindModel is a lookup of model name at the root: a name that is no
// valid model name, or of no model, is ErrNoEntry.
func FindModel(st *store.Store, name string) error {
	if err := format.ValidateModel(name); err != nil {
		return fmt.Errorf("%w: %v", ErrNoEntry, err)
	}
	if !st.Models().Exists(name) {
		return ErrNoEntry
	}
	return nil
}

// MakeModel makes model name, a mkdir at the root by user uid of group
// gid with mode: the name must be a valid model name (EINVAL otherwise);
// it exists at once, empty, owned by the caller with mode's permission
// bits. One that exists is ErrExists; after Stop every mkdir is
// store.ErrStopped; a failed mkdir makes nothing.
func MakeModel(st *store.Store, name string, uid, gid, mode uint32) error {
	if err := format.ValidateModel(name); err != nil {
		return err
	}
	if st.Stopped() {
		return store.ErrStopped
	}
	if st.Models().Exists(name) {
		return ErrExists
	}
	if err := st.Models().Admit(uid); err != nil {
		return err
	}
	st.Models().Add(name)
	if err := st.Models().SetOwner(name, store.ModelOwner{Uid: uid, Gid: gid, Mode: mode & 0o7777}); err != nil {
		st.Models().Abandon(name) // a failed mkdir makes nothing
		return err
	}
	return st.Models().SetMade(name, time.Now())
}

// RemoveModel drops model name, an rmdir at the root by user uid, once
// it holds no file (rm -r unlinks them first and removes the shard
// directories, which always succeeds when they are empty): the model's
// directories go from every tier, and it leaves the registry. A model
// that still holds files: ENOTEMPTY; one with a quota root set, removed
// by another user: EPERM (store.Models.Remove); a name that is no model:
// ErrNoEntry.
func RemoveModel(st *store.Store, name string, uid uint32) error {
	if err := FindModel(st, name); err != nil {
		return err
	}
	return st.Models().Remove(name, uid)
}
