package vfs

import (
	"context"
	"errors"
	"fmt"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/layout/registry"
	"github.com/ucmfs/ucmfs/store"
)

// The rules of a files model's names and of removing its published files
// (fs/filesdir serves the requests by them).

// CheckFileName checks name as a name in the directory dir of a files
// model: a valid name, and not one of the tiers' records at the model's
// root (store.ReservedFileName). Errors wrap format.ErrName (EINVAL).
func CheckFileName(dir, name string) error {
	if err := format.ValidateFileName(name); err != nil {
		return err
	}
	if store.ReservedFileName(dir, name) {
		return fmt.Errorf("%w: %q is ucmfs's own record of the model, kept beside its files", format.ErrName, name)
	}
	return nil
}

// OwnWriting is the file named name (key) that a caller of process tgid
// and user uid sees being written, its process's under a final name, its
// user's under a staging name; nil when none (a lookup of a name nobody writes costs no look at
// the caller). A file published or discarded, leaving the table, is none;
// so is a settled one (store.Draft.Settled: its bytes the published
// version's, only its last release to come): the lookup goes on to the
// published file, which a reader then opens and a rewrite replaces as a
// new version. With drop set a settled file is dropped too (an unlink or
// a rename of the name, a rename over it): a descriptor still open on it
// (a dup, a fork's) writes into nothing, as into an unlinked file on a
// local disk, and no later close brings the old file back under the name.
func OwnWriting(st *store.Store, key format.Key, name string, tgid, uid uint32, drop bool) *store.Draft {
	if !st.Writes().Named(key.Model, key.ShardDir(), name) {
		return nil
	}
	var w *store.Draft
	if st.Models().Staging(key.Model, key.ShardDir(), name) {
		w = st.Writes().Staging(key, name, uid)
	} else {
		w = st.Writes().Own(key, name, tgid)
	}
	if w == nil || !w.Writable() {
		return nil
	}
	if w.Settled() {
		if drop {
			w.DropSettled()
		}
		return nil
	}
	return w
}

// RemovePublished removes the published file key from every tier (after
// the GPU loads of its block: BlockOf) and forgets its hits and its
// model's usage.
func RemovePublished(st *store.Store, key format.Key) error {
	done := st.Removal(BlockOf(key))
	err := st.Tiers().Delete(key)
	done()
	if err == nil {
		st.ForgetHits(key, false)
		st.Models().ForgetUsage(key.Model)
	}
	return err
}

// BlockOf is the key whose GPU loads a removal of k waits for: the block
// of a sidecar, k itself otherwise.
func BlockOf(k format.Key) format.Key { return registry.Of(k).BlockOf(k) }

// DropOldVersion removes the published version of from that a file
// being written under from left when it was renamed away (a version its
// fsync published, or the file it was a new version of): the rename moves
// the name, as on a local disk. When that version is on a persistent tier
// and the renamed file to published at the rename, to is made durable
// first (store.Store.KeepDurable).
func DropOldVersion(ctx context.Context, st *store.Store, from, to format.Key) error {
	if !st.Tiers().HasKey(from) {
		// The usual case: from was a staging name, never published.
		// (Asking every tier to unlink a name it does not have costs a
		// directory lookup on disk each, a fifth of the rename.)
		return nil
	}
	if err := st.Writes().KeepDurable(context.WithoutCancel(ctx), from, to); err != nil {
		return err
	}
	if err := RemovePublished(st, from); err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	// The kernel's node of that version moved with its entry to the new
	// name, and may be open: a file published under from again is a new
	// version, with a node of its own (as after an unlink of an open
	// file). Before, it got that node's number, and its readers were
	// served the removed version's bytes with the new file's size.
	st.Writes().EndVersion(from)
	return nil
}

// EnsureSidecar derives and stores the sidecar key if it is derivable and
// not stored (store.Sidecars.Derive). A sidecar that is neither is left
// for the caller to find absent; an underivable block or a failed
// derivation is the error.
func EnsureSidecar(st *store.Store, key format.Key) error {
	if st.Tiers().Has(key) {
		return nil
	}
	if err := st.Sidecars().Derive(key); !errors.Is(err, store.ErrNotFound) {
		return err
	}
	return nil
}

// ReplacedVersion reports whether the published file k is a File
// published over an earlier version (its generation is not the first).
func ReplacedVersion(st *store.Store, k format.Key) bool {
	return registry.Of(k).Replaces() && st.Writes().Gen(k) != 0
}
