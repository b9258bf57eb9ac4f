package store

import (
	"context"
	"fmt"

	"github.com/ucmfs/ucmfs/format"
)

// RenameTo publishes a staging file of a files model under another name
// of the model, key, given at the rename (an engine's
// rename(<final>_<rand>.tmp, <final>)): the file stands for key from now
// on and publishes as Rename does, replacing a file published as key.
func (w *Draft) RenameTo(ctx context.Context, key format.Key) error {
	if key.Kind != format.File || key.Model != w.key.Model {
		return fmt.Errorf("%w: %s cannot become %s", ErrInvalid, w.key, key)
	}
	w.mu.Lock()
	if w.done {
		w.mu.Unlock()
		return fmt.Errorf("%s: %w", w.key, ErrDone)
	}
	old := w.key
	w.key = key
	w.pw.Rekey(key)
	w.mu.Unlock()
	w.s.WriteStarted(key)
	w.s.WriteEnded(old)
	return w.Rename(ctx)
}

// OwnFile returns the file name (standing for key) that process tgid is
// writing under its final name, or nil: in a files model a process sees
// the files it writes (UCM's logger reopens its own log by name).
func (s *Store) OwnFile(key format.Key, name string, tgid uint32) *Draft {
	return s.writes.get(writeKeyOf(key, name, false, Proc{Tgid: tgid}))
}
