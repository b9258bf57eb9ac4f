package mem

import (
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/tiers/index"
	"github.com/ucmfs/ucmfs/tiers/tier"
	"golang.org/x/sys/unix"
)

// memWriter is a file being written into the memory tier: a staging file
// .tmp-<random> in the private directory, renamed to <model>/<hh>/<id>.bin
// by Commit.
type memWriter struct {
	t   *Tier
	key format.Key
	tmp string

	mu   sync.Mutex // serializes Write, Commit and Abort
	f    *os.File   // closed once the Writer is done
	off  int64      // end of what Write wrote
	done bool
}

// File is the staging file.
func (w *memWriter) File() *os.File { return w.f }

// Write appends p after what earlier Writes wrote.
func (w *memWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return 0, fmt.Errorf("memory tier: write %s: %w", w.key, tier.ErrClosed)
	}
	n, err := w.f.WriteAt(p, w.off)
	w.off += int64(n)
	if err != nil {
		return n, tier.OSErr("memory tier: write", err)
	}
	return n, nil
}

// Commit publishes the file as a dirty entry, mapped (and locked) if the
// budget allows; when pages are locked after commit (pageLocker.deferred)
// the file goes to the locking worker instead. ErrFull (capacity, or the tmpfs itself full)
// leaves the Writer usable; ErrExist and other errors discard the file.
func (w *memWriter) Commit(opts tier.CommitOptions) (tier.Info, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return tier.Info{}, fmt.Errorf("memory tier: commit %s: %w", w.key, tier.ErrClosed)
	}
	t := w.t
	if err := t.enter(); err != nil {
		w.finish()
		return tier.Info{}, err
	}
	defer t.life.RUnlock()
	fi, err := tier.FileStat(w.f)
	if err != nil {
		w.discard()
		return tier.Info{}, err
	}
	size := fi.Size()
	if !t.idx.Reserve(size) {
		return tier.Info{}, fmt.Errorf("memory tier: %s: %w", w.key, tier.NoRoom(t.idx, size))
	}
	mtime := opts.PublishTime()
	if err := t.fs.Chtimes(w.tmp, mtime, mtime); err != nil {
		t.idx.Unreserve(size)
		w.discard()
		return tier.Info{}, err
	}
	var mapping []byte
	if !t.pages.deferred() {
		mapping = t.pages.lock(int(w.f.Fd()), size)
	}
	err = t.publish(w.tmp, w.key)
	if err != nil {
		t.pages.unlock(mapping)
		t.idx.Unreserve(size)
		if errors.Is(err, tier.ErrFull) {
			return tier.Info{}, err
		}
		w.discard()
		return tier.Info{}, err
	}
	e := tier.NewMemEntry(tier.Info{Key: w.key, Size: size, MTime: mtime, CRC: opts.CRC, HasCRC: opts.HasCRC})
	e.Set(index.Dirty, true)
	e.Set(index.CRCRead, true)
	e.SetMapping(mapping)
	rec, added := t.idx.Add(e)
	info := tier.InfoOf(&rec)
	if !added {
		t.pages.unlock(mapping)
	} else if t.lockq != nil && size > 0 {
		t.lockq.push(lockJob{e: e, f: w.f}) // the worker closes it
		w.f = nil
	}
	w.finish()
	return info, nil
}

// publish renames tmp (a staging file at the root) to key's path,
// creating its directories as needed; ErrExist when a file is there. The
// tier is on tmpfs (or, in tests only, a local disk): renameat2's
// RENAME_NOREPLACE is always there.
func (t *Tier) publish(tmp string, key format.Key) error {
	rel := key.Path()
	t.settle(key) // a removed file of key's still at rel is released first
	settled, remade := false, false
	for {
		if _, err := t.dirs.Ensure(t.fs, key); err != nil {
			if errors.Is(err, unix.ENOTDIR) && !settled {
				// A File removed where key's directories go (d/a,
				// for d/a/b) may still wait for its release.
				t.SettleAll()
				settled = true
				continue
			}
			return fmt.Errorf("memory tier: %w", err)
		}
		err := t.fs.Rename(tmp, rel, unix.RENAME_NOREPLACE)
		if err == nil {
			return nil
		}
		if errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("%w: %s", tier.ErrExist, t.fs.Path(rel))
		}
		if errors.Is(err, unix.ENOENT) && !remade {
			// A RemoveModel took the directory away: make it again.
			t.dirs.Forget(key.Model)
			remade = true
			continue
		}
		if errors.Is(err, unix.ENOTDIR) && !settled {
			// A directory the cache knows went (moved, removed) and a
			// File removed since took its name, not yet released.
			t.SettleAll()
			t.dirs.Forget(key.Model)
			settled = true
			continue
		}
		return tier.OSErr("memory tier: publish", err)
	}
}

// Abort discards the file.
func (w *memWriter) Abort() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.discard()
	}
}

// discard removes the staging file and ends the Writer.
func (w *memWriter) discard() {
	_ = w.t.fs.Unlink(w.tmp)
	w.finish()
}

// finish closes the file and ends the Writer.
func (w *memWriter) finish() {
	if w.f != nil {
		w.f.Close()
	}
	w.done = true
}

// Rekey makes the file publish as key instead (a staging file renamed to
// its final name before it was published).
func (w *memWriter) Rekey(key format.Key) { w.key = key }

// Park closes the staging file's descriptor while nobody writes it (a
// staging file waiting for its rename); Unpark opens it again. Both are
// no-ops on a done Writer.
func (w *memWriter) Park() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done && w.f != nil {
		w.f.Close()
		w.f = nil
	}
}

// Unpark opens the staging file again after Park.
func (w *memWriter) Unpark() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done || w.f != nil {
		return nil
	}
	f, err := w.t.fs.OpenFile(w.tmp, unix.O_RDWR, 0) // no walk of /proc/self/fd
	if err != nil {
		return tier.OSErr("memory tier: reopen a parked file", err)
	}
	w.f = f
	return nil
}
