package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/layout/registry"
	"golang.org/x/sys/unix"
)

// A File of a files model has versions; a Draft of one is the next.
//
//   - A published File opened for writing (not created) is a new version
//     of it: a Draft that starts as a copy of the published bytes
//     (Writes.Reopen).
//   - An fsync of a File being written publishes a copy of its bytes so
//     far as a version and leaves the Draft open (SyncVersion): a program
//     that writes, fsyncs and writes on (a log, a journal) goes on writing
//     its file, and its next close or fsync publishes the next version.
//
// In both the Draft's fillMark says what it held when it last matched a
// published version; a close publishes only a changed file, as a close
// of an empty file does not publish (emptyLocked), since a shell's
// `echo x >> f` closes the original descriptor before the first write.
// Left unchanged, its last release drops it: the published version is
// those bytes already.

// fillMark is the draft's file when it last matched a published version
// (the copy it was filled with, or the copy an fsync published): what it
// was, to tell a write since.
type fillMark struct {
	size         int64
	mtime, ctime unix.Timespec
	crc          uint32    // of the bytes copied
	setMTime     time.Time // the writer's utimes then (Draft.setMTime)
}

// Reopen opens the published File key for writing by p: a new
// version of it, written under its name and published at p's last close
// as a create over it would be, that starts as a copy of the published
// bytes. A program that opens a file of a files model for writing without
// O_TRUNC (an append to a log, a write in place) expects them there; the
// kernel sends an O_TRUNC open as an open for writing then a truncate, so
// it is copied for that too, then dropped. Readers of the published
// version go on reading it. When p is writing the name already, its
// write is joined as it is.
func (ws Writes) Reopen(p Proc, key format.Key) (*Draft, *Writer, error) {
	if !registry.Of(key).Replaces() {
		return nil, nil, fmt.Errorf("%w: %s is not a file of a files model", ErrInvalid, key)
	}
	w, d, started, err := ws.s.beginWrite(p, key, key.FileName(), OpenMode{})
	if err != nil || !started {
		return w, d, err
	}
	if err := w.fillFrom(key); err != nil {
		d.Release(context.Background())
		w.Discard()
		return nil, nil, fmt.Errorf("reopen %s: %w", key, err)
	}
	return w, d, nil
}

// fillFrom copies the published bytes of key into the draft, through its
// writes (so the size limit and the pending budget count them), and marks
// the draft as filled. A key no longer published leaves the draft empty,
// as a create would.
func (w *Draft) fillFrom(key format.Key) error {
	h, err := w.s.stack.Open(key)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	defer h.File.Close()
	w.mu.Lock()
	defer w.mu.Unlock()
	crc := format.NewCRC32C()
	buf := make([]byte, min(h.Size, 1<<20)) // a config file is small: no MiB per open to collect
	for off := int64(0); off < h.Size; {
		n, err := h.File.ReadAt(buf[:min(int64(len(buf)), h.Size-off)], off)
		if n > 0 {
			if _, werr := w.writeAt(buf[:n], off); werr != nil {
				return werr
			}
			crc.Write(buf[:n])
			off += int64(n)
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		if n == 0 {
			return fmt.Errorf("%s: short read at %d of %d bytes", key, off, h.Size)
		}
	}
	return w.markLocked(crc.Sum32())
}

// markLocked records the draft's file as matching a published version
// whose bytes have CRC-32C crc (under mu).
func (w *Draft) markLocked(crc uint32) error {
	var st unix.Stat_t
	if err := unix.Fstat(int(w.f.Fd()), &st); err != nil {
		return err
	}
	w.fill = &fillMark{size: st.Size, mtime: st.Mtim, ctime: st.Ctim, crc: crc, setMTime: w.setMTime}
	return nil
}

// touchedLocked is the time the writer of a File left as it was copied
// set with utimes since (zero when none): `touch -d` opens the file for
// writing and sets its times through the descriptor. The published
// version takes it instead of a new version (under mu).
func (w *Draft) touchedLocked() time.Time {
	if m := w.fill; m != nil && !w.setMTime.IsZero() && !w.setMTime.Equal(m.setMTime) {
		return w.setMTime
	}
	return time.Time{}
}

// SyncVersion is Sync for a File of a files model that is not a staging
// file: it publishes a copy of the file's bytes so far as the File's next
// version and returns once that is durable on the first persistent tier,
// leaving the file open to its writer (syncVersion). published says
// whether this call published; when nothing was written since the last
// version, it only makes that one durable.
func (d *Writer) SyncVersion(ctx context.Context) (published bool, verdict error) {
	w := d.w
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		if w.verdict == nil {
			return false, w.s.stack.Flush(ctx, w.key)
		}
		return false, w.verdict
	}
	if w.fill != nil && w.unwrittenLocked() {
		return false, w.s.stack.Flush(ctx, w.key)
	}
	return true, w.syncVersion(ctx)
}

// settledLocked reports whether the File's writer is done with it and
// its bytes are its published version's (under mu): the creating process
// closed every descriptor, and nothing was written since the draft last
// matched that version (a reopened File left as it was, or one an fsync
// published). Only its last release is to come, which drops it; a
// descriptor kept open (a fork, a dup) may hold that back a while. A
// file emptied (an O_TRUNC open) is not settled: its close did not
// publish it (emptyLocked), and a write through a duplicate may yet come.
func (w *Draft) settledLocked() bool {
	return registry.Of(w.key).Replaces() && !w.done && !w.staging && w.closed && w.allClosed() && w.asFilledLocked()
}

// DropSettled discards the draft if it is settled (settledLocked): what
// it holds is published, so only a later write through a descriptor still
// open is lost, dropped as a write to an unlinked file is. It reports
// whether the draft is gone (settled, or done already).
func (w *Draft) DropSettled() bool {
	w.mu.Lock()
	if w.done {
		w.mu.Unlock()
		return true
	}
	if !w.settledLocked() {
		w.mu.Unlock()
		return false
	}
	w.discardLocked()
	w.mu.Unlock()
	w.end()
	return true
}

// Settled is settledLocked.
func (w *Draft) Settled() bool {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.settledLocked()
}

// syncVersion publishes a copy of the file as its key's next version,
// durable, and marks the file as matching it (under mu). A copy refused
// (over the quota, too big) is the fsync's error; the file stays the
// writer's, and a close publishes it or returns the same.
func (w *Draft) syncVersion(ctx context.Context) error {
	s := w.s
	if s.stack.MemFSFull() {
		w.failed.CompareAndSwap(nil, &errMemFSFull) // writes_full.go
	}
	if failed := w.failed.Load(); failed != nil {
		return fmt.Errorf("%s: not published, a write to it failed: %w", w.key, *failed)
	}
	if err := w.unparkLocked(); err != nil {
		return err
	}
	st, err := w.f.Stat()
	if err != nil {
		return err
	}
	cp, err := w.copyOf(st.Size())
	if err != nil {
		return err
	}
	if !w.setMTime.IsZero() {
		cp.SetMTime(w.setMTime)
	}
	crc := format.NewCRC32C()
	if _, err := io.Copy(crc, io.NewSectionReader(w.f, 0, st.Size())); err != nil {
		s.stack.Abort(cp)
		return err
	}
	if _, err := s.Writes().Publish(cp, st.Size(), true); err != nil {
		return err
	}
	return w.markLocked(crc.Sum32())
}

// unwrittenLocked reports whether a close must not publish the file yet
// (under mu): nothing was written to it, it is empty (emptyLocked), or it
// is a reopened File whose size and times are still those of the copy.
func (w *Draft) unwrittenLocked() bool {
	return w.emptyLocked() || w.asFilledLocked()
}

// asFilledLocked reports whether the file's size and times are still
// those it had when it last matched a published version (under mu).
func (w *Draft) asFilledLocked() bool {
	m := w.fill
	if m == nil || w.f == nil {
		return false
	}
	var st unix.Stat_t
	return unix.Fstat(int(w.f.Fd()), &st) == nil && st.Size == m.size && st.Mtim == m.mtime && st.Ctim == m.ctime
}

// sameAsFillLocked reports whether a reopened File holds the bytes it was
// filled with (under mu): its size, then its CRC-32C, so a write within
// the granularity of the file's times still counts as one.
func (w *Draft) sameAsFillLocked() bool {
	m := w.fill
	if m == nil || w.f == nil {
		return false
	}
	st, err := w.f.Stat()
	if err != nil || st.Size() != m.size {
		return false
	}
	crc := format.NewCRC32C()
	if _, err := io.Copy(crc, io.NewSectionReader(w.f, 0, m.size)); err != nil {
		return false
	}
	return crc.Sum32() == m.crc
}
