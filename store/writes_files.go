package store

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/layout/registry"
	"github.com/ucmfs/ucmfs/tiers"
)

// RenameTo publishes a staging file of a files model under another name
// of the model, key, given at the rename (an engine's
// rename(<final>_<rand>.tmp, <final>)): the file stands for key from now
// on and publishes as Rename does, replacing a file published as key.
// Until it publishes (a descriptor still open) it is its process's file
// under key's name (rename).
func (w *Draft) RenameTo(ctx context.Context, key format.Key) error {
	if !registry.Of(key).Tree() || key.Model != w.key.Model {
		return fmt.Errorf("%w: %s cannot become %s", ErrInvalid, w.key, key)
	}
	if err := w.roomToPublish(key.Model); err != nil {
		return err
	}
	w.mu.Lock()
	if w.done {
		w.mu.Unlock()
		return fmt.Errorf("%s: %w", w.key, ErrDone)
	}
	old := w.key
	w.key = key
	if key != old {
		// Its bytes matched a version of old, not of key: a file
		// reopened and renamed unchanged publishes as key all the same
		// (old's published version goes with the rename).
		w.fill = nil
	}
	w.pw.Rekey(key)
	w.mu.Unlock()
	w.s.Writes().Started(key)
	w.s.Writes().Ended(old)
	return w.rename(ctx, true)
}

// Own returns the file name (standing for key) that process tgid is
// writing under its final name, or nil: in a files model a process sees
// the files it writes (UCM's logger reopens its own log by name).
func (ws Writes) Own(key format.Key, name string, tgid uint32) *Draft {
	return ws.s.writes.get(writeKeyOf(key, name, false, Proc{Tgid: tgid}))
}

// Move renames the published File from to the File to of the same
// files model or another (an engine's rename of a file it had already
// published, or `mv`): the bytes are published again under to (a link on
// the first directory tier, or a copy: copyFile), replacing a file
// published there, with from's modification time, then from is removed
// from every tier. When from was on a persistent tier (written back, or
// fsynced; or an older version of it, which the removal of from takes off
// the tier), to is made durable before from goes (Writes.KeepDurable). Readers
// that have from open go on reading it. Errors:
// ErrNotFound when from is not published, ErrInvalid for keys that are
// not Files of files models.
func (ws Writes) Move(ctx context.Context, from, to format.Key) error {
	if from == to && registry.Of(from).Tree() {
		return nil
	}
	durable, _, err := ws.s.copyFile(from, to, false)
	if err != nil {
		return err
	}
	if durable {
		if err := ws.s.stack.Flush(ctx, to); err != nil {
			ws.s.dropCopy(to)
			return fmt.Errorf("move %s to %s: making the copy durable: %w", from, to, err)
		}
	}
	return ws.s.dropMoved(from, to)
}

// copyFile publishes the bytes of the published File from again as the
// File to of the same files model or another, replacing a file published
// there, with from's modification time and its user's pin: the first
// half of a move. Where the first directory tier holds from's current
// version, to is a hard link of it there (tiers.Stack.LinkOnDisk):
// linked, and synced there unless batch (the caller then syncs the
// links' directories, tiers.Stack.SyncLinks); else a copy through
// memory, and durable is whether it must be made durable before from
// goes (from was on a persistent tier; from stays, durable, if that
// fails).
func (s *Store) copyFile(from, to format.Key, batch bool) (durable, linked bool, err error) {
	if !registry.Of(from).Tree() || !registry.Of(to).Tree() || from == to ||
		from.Model != to.Model && (!s.Models().LayoutOf(from.Model).Tree() || !s.Models().LayoutOf(to.Model).Tree()) {
		return false, false, fmt.Errorf("%w: %s cannot move to %s", ErrInvalid, from, to)
	}
	if s.Stopped() {
		return false, false, fmt.Errorf("shutting down: %w", ErrStopped)
	}
	bi, err := s.stack.Stat(from)
	if err != nil {
		return false, false, err
	}
	pinned := s.userPinned(from)
	// Within a model the copy is not charged to its quota (the model
	// holds no more after the move); into another, it is.
	charge := from.Model != to.Model
	s.Writes().Started(to)
	defer s.Writes().Ended(to) // moves to's epoch: a miss cached meanwhile is not kept
	if pw, err := s.stack.LinkOnDisk(from, to); err == nil {
		// Its bytes are on the first directory tier: a link there, as
		// durable as from (no copy to write back).
		pw.SetReplace()
		pw.SetMTime(bi.MTime)
		if _, err := s.publish(pw, bi.Size, !batch, charge); err != nil {
			return false, false, fmt.Errorf("move %s to %s: %w", from, to, err)
		}
		linked = true
	} else if durable, err = s.copyBytes(from, to, bi, charge); err != nil {
		return false, false, err
	}
	if pinned {
		// The user's pin goes with the file, as xattrs go with a renamed
		// file on a local disk.
		if err := s.SetUserPin(to, true); err != nil {
			s.log.Warn("move: the pin did not go with the file", "file", to.String(), "err", err)
		}
	}
	return durable, linked, nil
}

// copyBytes is copyFile's copy of from's bytes through a pending write in
// memory, published as to; durable is whether from was on a persistent
// tier (the copy is not yet): its version, or an older one that a version
// in memory alone replaced, whose file the removal of from takes off the
// tier (TestMovedOverDurableVersionSurvivesPowerCut).
func (s *Store) copyBytes(from, to format.Key, bi tiers.BlockInfo, charge bool) (durable bool, err error) {
	h, err := s.stack.Open(from)
	if err != nil {
		return false, err
	}
	defer h.File.Close()
	pw, err := s.stack.CreateStaging(to)
	if err != nil {
		return false, err
	}
	pw.SetReplace()
	pw.SetMTime(bi.MTime)
	n, err := io.Copy(pw.File(), io.NewSectionReader(h.File, 0, h.Size))
	if err != nil {
		s.stack.Abort(pw)
		return false, fmt.Errorf("move %s to %s: %w", from, to, err)
	}
	if _, err := s.publish(pw, n, false, charge); err != nil {
		return false, fmt.Errorf("move %s to %s: %w", from, to, err)
	}
	return !bi.Dirty && s.stack.Persistent() || s.stack.OnPersistent(from), nil
}

// userPinned reports whether a user pinned the File k (user.ucm.pinned),
// rather than a pinned directory above it.
func (s *Store) userPinned(k format.Key) bool {
	if user, loading := s.UserPin(k); loading {
		return user
	}
	return s.stack.Pinned(k) && !s.dirPinned(k)
}

// dropCopy removes the copy to of a move that did not complete.
func (s *Store) dropCopy(to format.Key) {
	if err := s.stack.Delete(to); err != nil && !errors.Is(err, ErrNotFound) {
		s.log.Warn("move: dropping the copy of a move that failed", "file", to.String(), "err", err)
	}
}

// dropMoved removes from, the second half of a move to to.
func (s *Store) dropMoved(from, to format.Key) error {
	if err := s.stack.Delete(from); err != nil && !errors.Is(err, ErrNotFound) {
		return fmt.Errorf("move %s to %s: %w", from, to, err)
	}
	s.bumpGen(from) // a file published under from's name again is a new one
	return nil
}

// KeepDurable makes the published File to durable when the published
// File from, which a rename replaced by to, is on a persistent tier, so
// that from may go: a crash between the two then leaves one of them on
// disk. It is how a file is written to survive a crash, by editors and
// engines alike: write a temporary file, fsync it, rename it over the
// final name. Without it the rename would take the durable bytes out of
// every persistent tier and leave them in memory only until their
// write-back, and kill -9 meanwhile would lose both names.
func (ws Writes) KeepDurable(ctx context.Context, from, to format.Key) error {
	if !ws.s.stack.Persistent() {
		return nil
	}
	if bi, err := ws.s.stack.Stat(from); err != nil || bi.Dirty && !ws.s.stack.OnPersistent(from) {
		return nil // from is in memory only, no older version on a tier: nothing durable to keep
	}
	if !ws.s.stack.Has(to) {
		return nil // to publishes later (its writer's last close), in memory
	}
	if err := ws.s.stack.Flush(ctx, to); err != nil {
		return fmt.Errorf("making %s durable before %s goes: %w", to, from, err)
	}
	return nil
}

// roomToPublish checks, for a rename that publishes the file (no
// descriptor holds it open), that model's quota and its owner's budget
// take it: a rename they refuse fails before anything changes, the
// staging file still there with its bytes (a failed rename changes
// nothing, as rename(2)). A quota changed between this check and the
// publish still fails the publish, as before.
func (w *Draft) roomToPublish(model string) error {
	w.mu.Lock()
	if w.done || !w.allClosed() {
		w.mu.Unlock()
		return nil
	}
	size := w.sizeLocked()
	w.mu.Unlock()
	if err := w.s.mayAdmit(model, size); err != nil {
		return fmt.Errorf("model %s: %w", model, err)
	}
	return nil
}

// sizeLocked is the file's size now (under mu): its descriptor's, or the
// size it was parked with.
func (w *Draft) sizeLocked() int64 {
	if w.f != nil {
		if st, err := w.f.Stat(); err == nil {
			return st.Size()
		}
	}
	return w.size
}

// mayAdmit reports whether size more bytes would pass model's quota or
// its owner's budget now (admit and admitUser, taken back at once).
func (s *Store) mayAdmit(model string, size int64) error {
	if err := s.admit(model, size); err != nil {
		return err
	}
	s.unadmit(model, size)
	uid, charged, err := s.admitUser(model, size)
	if charged {
		s.unadmitUser(uid, size)
	}
	return err
}
