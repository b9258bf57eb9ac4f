package dir

import (
	"errors"
	"fmt"
	"os"
	"path"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/layout/registry"
	"github.com/ucmfs/ucmfs/tiers/index"
	"github.com/ucmfs/ucmfs/tiers/tier"
	"golang.org/x/sys/unix"
)

// dirWriter is a file being written into a directory tier: a temp file
// <dir>/<model>/<hh>/.tmp-<id>-<random> beside its final name, so the
// publishing rename stays in one directory and the temp file never appears
// under a final name.
type dirWriter struct {
	t   *Tier
	key format.Key
	tmp string
	f   *os.File

	mu   sync.Mutex // serializes Write, Commit and Abort
	off  int64      // end of what Write accepted
	err  error      // sticky write error: the file is incomplete
	done bool
	dio  *directBuf // O_DIRECT buffering, nil when writes are buffered
}

// Create starts a temp file for key beside its final name.
func (t *Tier) Create(key format.Key) (tier.Writer, error) {
	return t.create(key, t.direct.Load())
}

// create is Create; with direct set, Write writes with O_DIRECT.
func (t *Tier) create(key format.Key, direct bool) (tier.Writer, error) {
	if err := tier.CheckKey(key); err != nil {
		return nil, err
	}
	w := &dirWriter{t: t, key: key}
	dir := path.Dir(key.Path())
	err := t.do("create", func() error {
		for attempt := 0; ; attempt++ {
			if err := t.EnsureDir(key); err != nil {
				return err
			}
			tmp := dir + "/" + TempName(key.ID.String())
			// 0644 until Commit: setting the CRC xattr needs write
			// permission on the inode (for a daemon that is not root).
			f, err := t.fs.OpenFile(tmp, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL, 0o644)
			switch {
			case err == nil:
				w.tmp, w.f = tmp, f
				return nil
			case errors.Is(err, os.ErrExist):
				continue
			case (tier.IsENOENT(err) || errors.Is(err, unix.ELOOP)) && attempt == 0:
				// Removed under us, or a link put in its place: make it
				// again (the link goes: DirCache.Ensure).
				t.dirs.Forget(key.Model)
				continue
			}
			return tier.OSErr("create", err)
		}
	}, func() { w.cleanup() })
	if err != nil {
		return nil, fmt.Errorf("%s tier: %w", t.kind, err)
	}
	if direct {
		w.dio = newDirectBuf()
	}
	return w, nil
}

// EnsureDir makes the directory of key's file, when missing.
func (t *Tier) EnsureDir(key format.Key) error {
	made, err := t.dirs.Ensure(t.fs, key)
	if made && registry.Of(key).Tree() && key.ShardDir() != "" {
		t.flat.madeDir(key.Model) // made, or found there
	}
	return err
}

// File is the temp file. With O_DIRECT writes, bytes given to Write reach
// it in aligned chunks and at Commit: do not mix Write and writes through
// File on the same range.
func (w *dirWriter) File() *os.File { return w.f }

// Write appends p after what earlier Writes wrote.
func (w *dirWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return 0, fmt.Errorf("%s tier: write %s: %w", w.t.kind, w.key, tier.ErrClosed)
	}
	if w.err != nil {
		return 0, w.err
	}
	if w.dio != nil {
		return w.writeDirect(p)
	}
	var n int
	off := w.off
	err := w.op("write", func() error {
		var err error
		n, err = w.f.WriteAt(p, off)
		return err
	}, w.cleanup)
	if err != nil && w.done {
		return 0, err
	}
	w.off += int64(n)
	if err != nil {
		w.err = fmt.Errorf("%s tier: %w", w.t.kind, tier.OSErr("write", err))
		return n, w.err
	}
	return n, nil
}

// errNotRun: the caller gave up before the operation started.
var errNotRun = errors.New("operation abandoned before it started")

// op runs fn under the tier's timeout on behalf of the Writer. When the
// tier is closed, Down, or fn does not answer in time, the Writer ends:
// if fn never started, op removes the temp file (in the background, the
// directory may not answer); if it did, late runs after it instead.
func (w *dirWriter) op(name string, fn func() error, late func()) error {
	var claim atomic.Bool
	ran := false // set and read only by the operation's goroutine
	err := w.t.do(name, func() error {
		if !claim.CompareAndSwap(false, true) {
			return errNotRun
		}
		ran = true
		return fn()
	}, func() {
		if ran && late != nil {
			w.whileOpen(late)
		}
	})
	if errors.Is(err, tier.ErrStalled) || errors.Is(err, tier.ErrClosed) {
		w.done = true
		w.dio = nil // fn may still read it: leave it to the GC, not the pool
		if claim.CompareAndSwap(false, true) {
			w.t.lates.Add(1)
			go w.cleanupLate()
		}
	}
	return err
}

// cleanupLate is the background clean-up of a Writer the tier refused
// an operation of (closed, Down): whileOpen, counted in t.lates.
func (w *dirWriter) cleanupLate() {
	defer w.t.lates.Done()
	w.whileOpen(func() {
		if w.t.health.get() == Down {
			if w.f != nil {
				w.f.Close() // no answer to wait for: the next start removes the file
			}
			return
		}
		w.cleanup()
	})
}

// whileOpen runs fn, a clean-up of the Writer after the tier gave up on
// it, unless the tier is closed by then: then it closes the temp file
// and leaves it for the next start, which removes temp files. The
// directory is no longer the tier's to act on after Close (a clean-up
// that ran after it unlinked in a directory another stack had opened:
// the soak's crashfs.Disk.Late).
func (w *dirWriter) whileOpen(fn func()) {
	t := w.t
	t.lateMu.RLock()
	defer t.lateMu.RUnlock()
	if t.closed.Load() {
		if w.f != nil {
			w.f.Close()
		}
		return
	}
	fn()
}

// Commit publishes the file: the CRC xattr when given, fsync when asked
// (or SyncOnCommit), a no-replace rename, fsync of the directory when
// syncing. A new version of a name (its old version's file superseded
// here) is fsynced before it is renamed over the old one, asked or not:
// the rename makes the new file the name's, and a later fsync of the
// directory (another file's durable publish) would make that durable
// while the new bytes were not; a power cut then left the name with
// torn bytes, which the CRC check refuses, and so with no version at
// all, where the old one had been acknowledged durable (the soak's
// "torn", seed 1796638164599371907). ext4 does the same on its own for
// a rename over a file (auto_da_alloc); not every filesystem does.
// ErrFull from the capacity check, or ENOSPC from the rename,
// leaves the Writer usable; ENOSPC from fsync is reported as ErrFull too,
// but the data may be lost, so that copy is discarded. ErrExist and other
// errors discard the file.
func (w *dirWriter) Commit(opts tier.CommitOptions) (tier.Info, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	t := w.t
	if w.done {
		return tier.Info{}, fmt.Errorf("%s tier: commit %s: %w", t.kind, w.key, tier.ErrClosed)
	}
	if w.err == nil && w.dio != nil {
		if err := w.flushDirect(); err != nil && w.done {
			return tier.Info{}, fmt.Errorf("%s tier: %w", t.kind, err)
		}
	}
	if w.err != nil {
		w.abort()
		return tier.Info{}, w.err
	}
	var info tier.Info
	var keep bool
	err := w.op("commit", func() error {
		var err error
		info, keep, err = w.commitFS(opts)
		return err
	}, func() {
		if keep {
			w.cleanup()
		}
	})
	if !w.done && !keep {
		w.done = true
		w.releaseBuf()
	}
	if err != nil {
		return info, fmt.Errorf("%s tier: %w", t.kind, err)
	}
	return info, nil
}

// commitFS is Commit's filesystem work. keep reports that the temp file is
// intact and the Writer usable; otherwise it is published or removed.
func (w *dirWriter) commitFS(opts tier.CommitOptions) (info tier.Info, keep bool, err error) {
	t := w.t
	fi, err := tier.FileStat(w.f)
	if err != nil {
		w.cleanup()
		return tier.Info{}, false, err
	}
	size := fi.Size()
	if !t.idx.Reserve(size) {
		return tier.Info{}, true, fmt.Errorf("%s: %w", w.key, tier.NoRoom(t.idx, size))
	}
	if t.fsFull(size) {
		t.idx.Unreserve(size)
		return tier.Info{}, true, fmt.Errorf("%s needs %d bytes, the filesystem has less free: %w", w.key, size, tier.ErrFull)
	}
	added := false
	defer func() {
		if !added {
			t.idx.Unreserve(size)
		}
	}()
	if opts.HasCRC {
		w.setCRC(crcXattr, opts.CRC)
	}
	if opts.HasHeaderCRC {
		w.setCRC(format.HeaderCRCXattr, opts.HeaderCRC)
	}
	sync := opts.Sync || t.syncAll
	if opts.HasCRC && t.noXattr.Load() {
		if err := t.writeSum(w.key, w.f, opts.CRC, sync); err != nil {
			if t.sumLog.Allow(time.Now()) {
				t.log.Warn("tier kept no sum of a file: its CRC is unknown until a read computes it", "tier", t.kind, "key", w.key.String(), "err", err)
			}
		}
	}
	mtime := opts.PublishTime()
	if err := t.fs.Chtimes(w.tmp, mtime, mtime); err != nil {
		w.cleanup()
		return tier.Info{}, false, tier.OSErr("utimes", err)
	}
	// Published files are read-only; a filesystem that refuses the mode
	// change still gets the file.
	_ = w.f.Chmod(0o444)
	dst := w.key.Path()
	publish := t.pub.publish
	replacing := t.superseded(w.key)
	if replacing {
		publish = t.pub.replace // over the version this one replaces
		if t.Shared() {
			publish = t.pub.replaceShared
		}
	}
	// A new version's bytes are durable before it is renamed over the old
	// one's file, durable or not (Commit).
	if sync || replacing {
		if err := t.fs.SyncFile(w.f); err != nil {
			w.cleanup()
			if errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EDQUOT) {
				t.FSForget()
			}
			return tier.Info{}, false, tier.OSErr("fsync", err)
		}
	}
	if err := publish(t.fs, w.tmp, dst); err != nil {
		if errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EDQUOT) {
			t.FSForget()
			return tier.Info{}, true, tier.OSErr("publish", err)
		}
		w.cleanup()
		if errors.Is(err, tier.ErrExist) {
			return tier.Info{}, false, err
		}
		return tier.Info{}, false, tier.OSErr("publish", err)
	}
	w.f.Close()
	t.fsTake(size)
	if replacing {
		t.settle(w.key)
		t.idx.Remove(w.key) // an adopt of the old file that raced the supersede
	}
	info = tier.Info{Key: w.key, Size: size, MTime: mtime, CRC: opts.CRC, HasCRC: opts.HasCRC}
	e := tier.NewEntry(info)
	e.Set(index.CRCRead, true)
	rec, _ := t.idx.Add(e)
	info, added = tier.InfoOf(&rec), true
	if sync {
		if err := tier.SyncDir(t.fs, path.Dir(dst)); err != nil {
			if replacing {
				return info, false, fmt.Errorf("published %s: %w: %w", w.key, tier.ErrUnsynced, err)
			}
			return info, false, fmt.Errorf("published %s, but: %w", w.key, err)
		}
	}
	return info, false, nil
}

// setCRC keeps crc in the xattr name of the temp file, unless the tier's
// filesystem has no xattrs.
func (w *dirWriter) setCRC(name string, crc uint32) {
	t := w.t
	if t.noXattr.Load() {
		return
	}
	err := tier.IgnoringEINTR(func() error { return unix.Fsetxattr(int(w.f.Fd()), name, formatCRC(crc), 0) })
	if errors.Is(err, unix.ENOTSUP) || errors.Is(err, unix.EOPNOTSUPP) {
		t.noXattr.Store(true)
		t.log.Info("tier keeps no CRC xattrs: the filesystem does not support them", "kind", t.kind, "dir", t.root)
	}
}

// Abort discards the file.
func (w *dirWriter) Abort() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.abort()
	}
}

// abort ends the Writer and removes the temp file.
func (w *dirWriter) abort() {
	_ = w.op("abort", func() error { w.cleanup(); return nil }, nil)
	w.done = true
	w.releaseBuf()
}

// cleanup closes and removes the temp file.
func (w *dirWriter) cleanup() {
	if w.f != nil {
		w.f.Close()
	}
	if w.tmp != "" {
		_ = w.t.fs.Unlink(w.tmp)
	}
}
