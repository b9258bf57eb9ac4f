package store

import (
	"context"
	"errors"
	"fmt"
)

// A directory of a files model on a host with a shared tier: another
// host may move or remove it on the share. Its listing and its lookup
// check it there, at most once per TTL (tiers.Stack.RevalidateTreeDir):
// the files the share no longer has go from the listing, those another
// host published there come in it, and a directory the share no longer
// has, holding nothing of this host's, is forgotten (before, a directory
// found once was known for the run, and listed its files as they were).

// filesDirGone reports whether the directory dir of the files model is
// gone from the shared tiers, and forgets it then: nothing of it is
// being written here, and no tier of this host holds a file in it.
func (s *Store) filesDirGone(model, dir string) bool {
	if !s.stack.RevalidateTreeDir(model, dir) || s.writes.inShard(model, dir) {
		return false
	}
	if err := s.stack.RemoveDir(model, dir); err != nil {
		return false // something of this host's is in it still
	}
	s.trees.remove(model, dir)
	s.dropDirPin(model, dir)
	return true
}

// A directory of a files model moved on a host with a shared tier
// (MoveFilesDir): the share takes it in one rename(2) of the directory
// (tiers.Stack.RenameTreeDirOnShare), so that another host's listing,
// which checks the directory there, finds it whole at its old name or
// whole at its new one. (Moved file by file, as on memory and the
// private tiers, another host listed some files under each name, and
// neither whole, for the seconds the move took.) Before the rename the
// share is made to hold every file beneath the directory that this host
// holds (shareWhole): the rename moves what the share has. A move into
// another model stays file by file (a shared tier's move record names
// its own model only: files_move_record.go).

// shareWhole makes the shared tiers hold every file of m (those in
// memory only written back, those owed paid) when m moves on the share.
func (s *Store) shareWhole(ctx context.Context, m *dirMove) error {
	if m.toModel != m.model || !s.stack.HasShared() {
		return nil
	}
	if err := s.stack.FlushKeys(ctx, m.files); err != nil {
		return fmt.Errorf("%s/%s: writing its files to the share before the move: %w", m.model, m.from, err)
	}
	return nil
}

// renameOnShare renames m's directory on the shared tiers, when it moves
// within its model; done(ok) ends it (ok: the move went through on the
// other tiers too, else the share's rename is undone).
func (s *Store) renameOnShare(m *dirMove) (done func(ok bool), err error) {
	if m.toModel != m.model || !s.stack.HasShared() {
		return func(bool) {}, nil
	}
	done, m.onShare, err = s.stack.RenameTreeDirOnShare(m.model, m.from, m.to)
	if errors.Is(err, ErrNotFound) {
		return func(bool) {}, nil // not on the share (made while it was down): file by file
	}
	if err != nil {
		return nil, fmt.Errorf("%s/%s to %s on the share: %w", m.model, m.from, m.to, err)
	}
	return done, nil
}
