package vfs

import (
	"context"
	"errors"
	"fmt"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/store"
)

// What a lookup, a create, an rmdir, an unlink and a rename of a file
// mean in a files model
// (fs/filesdir/ops.go and fs/filesdir/rename.go serve the requests by them; a
// rename of a directory is fs/filesdir/move_dir.go's).

// LookupName is the path in its model of name, looked up in directory
// dir (CheckFileName): an O_TMPFILE file's (it has no name yet) and a bad
// name are ErrNoEntry, a name too long format.ErrNameTooLong (as a local
// disk answers); all plain refusals.
func LookupName(dir, name string) (string, error) {
	if IsTmpfileName(name) {
		return "", ErrNoEntry
	}
	if err := CheckFileName(dir, name); err != nil {
		if errors.Is(err, format.ErrNameTooLong) {
			return "", Plain(err)
		}
		return "", fmt.Errorf("%w: %v", ErrNoEntry, err)
	}
	return format.JoinFilePath(dir, name), nil
}

// FilesCreate is the File a create of name in directory dir of files
// model model starts, and whether it is a staging file (published at its
// rename; else at its writer's last close). A directory of that name is
// ErrIsDir; a bad name an error wrapping format.ErrName.
func FilesCreate(st *store.Store, model, dir, name string) (key format.Key, staging bool, err error) {
	if err := CheckFileName(dir, name); err != nil {
		return key, false, err
	}
	rel := format.JoinFilePath(dir, name)
	if st.FilesDir(model, rel) {
		return key, false, ErrIsDir
	}
	return format.FileKey(model, rel), st.Models().Staging(model, dir, name), nil
}

// FilesRmdir removes the empty directory rel of files model model
// (store.Store.FilesRmdir): a file of that name is ErrNotDir, nothing
// of that name ErrNoEntry.
func FilesRmdir(st *store.Store, model, rel string) error {
	if st.Tiers().Has(format.FileKey(model, rel)) {
		return ErrNotDir
	}
	err := st.FilesRmdir(model, rel)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("%w: %v", ErrNoEntry, err)
	}
	return err
}

// UnlinkFile removes the File key: w, the caller's file being written
// under its name (vfs.OwnWriting), is dropped, and a published file of
// the name is removed (from every tier; open descriptors keep reading
// it). open reports whether the name's node serves open descriptors (it
// is asked before the removal): once the file is removed, one published
// under the name again is then a new version, with a node of its own.
func UnlinkFile(st *store.Store, key format.Key, w *store.Draft, open func() bool) error {
	if w != nil {
		w.Discard()
		if !st.Tiers().Has(key) {
			return nil
		}
		// A published version of the name too (one its writer's fsync
		// published, or the one it was writing a new version of): the
		// name goes, as on a local disk.
	}
	if !st.Tiers().Has(key) && st.FilesDir(key.Model, key.Name) {
		return ErrIsDir
	}
	opened := open()
	if err := RemovePublished(st, key); err != nil {
		return err
	}
	if opened {
		st.Writes().EndVersion(key) // its node serves the open descriptors
	}
	return nil
}

// CheckRename checks a rename of the File from to target: w is the
// caller's file being written under from's name, nil when the published
// file moves. Another model's directory takes a published file
// (store.Store.MoveFile) but not one being written, whose draft is its
// model's (ErrCrossDir); a directory is not replaced by a file
// (ErrIsDir); with noReplace (RENAME_NOREPLACE) a published target is
// ErrExists.
func CheckRename(st *store.Store, from, target format.Key, w *store.Draft, noReplace bool) error {
	if target.Model != from.Model && w != nil {
		return fmt.Errorf("a file being written to another model: %w", ErrCrossDir)
	}
	if st.FilesDir(target.Model, target.Name) {
		return ErrIsDir
	}
	if noReplace && st.Tiers().Has(target) {
		return ErrExists
	}
	return nil
}

// RenameFile publishes w under target, in any directory of the model,
// replacing a file published there (and dropping the version of from
// that w replaced: DropOldVersion); published reports that w took the
// name. Without w it moves the published file from to target
// (store.Writes.Move): moving is called just before, and the func it
// returns once the file moved.
func RenameFile(ctx context.Context, st *store.Store, from, target format.Key, w *store.Draft, moving func() (moved func())) (published bool, err error) {
	if w != nil {
		err = w.RenameTo(ctx, target)
		switch {
		case err == nil:
			return true, DropOldVersion(ctx, st, from, target)
		case !errors.Is(err, store.ErrDiscarded) || !st.Tiers().Has(from):
			return false, err
		}
		// A new version its writer left as it was, discarded by the
		// release that follows the close meanwhile: the published file
		// is the name's, and it moves.
	}
	moved := moving()
	done := st.Removal(from) // after the GPU loads of the file
	// Not interrupted (a rename on a local disk never is: EINTR would
	// fail a Go caller, whose runtime signals its threads).
	err = st.Writes().Move(context.WithoutCancel(ctx), from, target)
	done()
	if err != nil {
		return false, err
	}
	moved()
	return false, nil
}
