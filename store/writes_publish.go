package store

import (
	"context"
	"errors"
	"time"

	"github.com/ucmfs/ucmfs/tiers"
)

// publish validates and publishes the file once; later calls return the
// first verdict (and, for fsync, make the block durable). published says
// whether this call published (or refused) it.
func (w *Draft) publish(ctx context.Context, durable bool) (published bool, verdict error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		if durable && w.verdict == nil {
			return false, w.s.stack.Flush(ctx, w.key)
		}
		return false, w.verdict
	}
	w.done = true
	w.verdict = w.publishOnce(ctx, durable)
	w.end()
	return true, w.verdict
}

// publishOnce is publish's work, under w.mu. With durable set the block
// is durable when it returns nil.
func (w *Draft) publishOnce(ctx context.Context, durable bool) error {
	s := w.s
	if err := w.unparkLocked(); err != nil {
		s.stack.Abort(w.pw)
		return err
	}
	st, err := w.f.Stat()
	if err != nil {
		s.stack.Abort(w.pw)
		return err
	}
	size := st.Size()
	if !w.setMTime.IsZero() {
		w.pw.SetMTime(w.setMTime)
	}
	info, err := s.Publish(w.pw, size, durable)
	switch {
	case err == nil:
		w.size, w.mtime = info.Size, info.MTime
		w.mine = true
		return nil
	case errors.Is(err, tiers.ErrExist):
		w.size, w.mtime = size, time.Now()
		if !w.setMTime.IsZero() {
			// Written again (rsync after a change of times): the copy
			// kept takes the times the writer set.
			if err := s.stack.SetMTime(w.key, w.setMTime); err == nil {
				w.mtime = w.setMTime
			}
		}
		if durable {
			return s.stack.Flush(ctx, w.key)
		}
		return nil // already present: one copy is kept
	default:
		return err
	}
}
