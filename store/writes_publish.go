package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/ucmfs/ucmfs/tiers"
	"golang.org/x/sys/unix"
)

// publish validates and publishes the file once; later calls return the
// first verdict (and, for fsync, make the block durable). published says
// whether this call published (or refused) it.
func (w *Draft) publish(ctx context.Context, durable bool) (published bool, verdict error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	durable = durable || w.synced
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
	if s.stack.MemFSFull() {
		w.failed.CompareAndSwap(nil, &errMemFSFull) // writes_full.go
	}
	if failed := w.failed.Load(); failed != nil {
		// What the writer meant is not all there: a torn file never
		// publishes. Its close (or rename) returns the write's error.
		s.stack.Abort(w.pw)
		return fmt.Errorf("%s: not published, a write to it failed: %w", w.key, *failed)
	}
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
	pw := w.pw
	if w.copyOut {
		if cp, err := w.copyOf(size); err == nil {
			pw = cp
			w.copied, w.copyAt = true, st.ModTime()
		} else {
			// No room for a copy (the memory tier's filesystem full): the
			// file itself publishes, as without the copy, and a change
			// after it is caught at its last release (checkUnchanged).
			s.log.Warn("fsync: no copy to publish, the file itself is published", "key", w.key.Path(), "err", err)
		}
	}
	if !w.setMTime.IsZero() {
		pw.SetMTime(w.setMTime)
	}
	info, err := s.Writes().Publish(pw, size, durable)
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

// copyOf makes a copy of the file's size bytes, to publish in its place
// (under mu): the file itself stays the writer's. The copy is in-kernel
// (copy_file_range on the memory tier's tmpfs).
func (w *Draft) copyOf(size int64) (*tiers.PendingWrite, error) {
	s := w.s
	pw, err := s.stack.CreateStaging(w.key)
	if err != nil {
		return nil, err
	}
	if s.Models().LayoutOf(w.key.Model).Replaces() {
		pw.SetReplace()
	}
	if err := copyRange(pw.File(), w.f, size); err != nil {
		s.stack.Abort(pw)
		return nil, fmt.Errorf("%s: a copy to publish: %w", w.key, err)
	}
	return pw, nil
}

// copyRange copies the first size bytes of src to dst, at explicit
// offsets (neither file's position moves), in the kernel where it can
// (copy_file_range), else through a buffer.
func copyRange(dst, src *os.File, size int64) error {
	var in, out int64
	for in < size {
		n, err := unix.CopyFileRange(int(src.Fd()), &in, int(dst.Fd()), &out, int(size-in), 0)
		if err != nil || n == 0 {
			if in > 0 || err == nil {
				return fmt.Errorf("copy_file_range stopped at %d of %d bytes: %v", in, size, err)
			}
			_, err := io.Copy(io.NewOffsetWriter(dst, 0), io.NewSectionReader(src, 0, size))
			return err
		}
	}
	return nil
}

// writtenAfterCopy reports, at a close by the writer, a file written
// after its fsync published a copy of it: the bytes written since are in
// no published file (ErrImmutable, as a write after a publish is without
// passthrough).
func (w *Draft) writtenAfterCopy() error {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if !w.copied || w.f == nil {
		return nil
	}
	st, err := w.f.Stat()
	if err != nil || (st.ModTime().Equal(w.copyAt) && st.Size() == w.size) {
		return nil
	}
	return fmt.Errorf("written after an fsync published it: those writes are not in the published file: %w", ErrImmutable)
}
