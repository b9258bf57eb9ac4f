package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/layout/registry"
	"github.com/ucmfs/ucmfs/tiers"
	"golang.org/x/sys/unix"
)

// Files being written (docs/spec.md §6, docs/semantics.md "Publish").
//
// A file being written is a Draft: one private file of the memory tier
// (its DraftFile) that any number of descriptors (Writer) may write
// at any offset. It is one of two kinds:
//
//   - a final name (<id>.bin, <id>.repr, a raw <id>) that a process
//     created: no lookup finds it (nobody reads a block before it is
//     published), but another create of the name by the same process
//     (its thread group) joins it, so the threads of one writer share the
//     file while two engines that write one id never do. It publishes
//     when the process is done with it: when every open descriptor of it
//     has been closed by that process, or at fsync. A close from another
//     process (a child closing an inherited or close-on-exec descriptor at
//     exec or exit) neither publishes nor rejects.
//   - a staging name (<final>.tmp, rsync's .<final>.XXXXXX): visible to
//     the processes of the user that made it, kept after close, and
//     published by Rename. If descriptors are still open at the rename it
//     publishes when the creating process has closed them all.
//
// The write table (writes_table.go) finds them by name; an entry leaves
// it when it is published, renamed, unlinked or discarded.

// Proc is the process a request comes from: its thread group and user.
type Proc struct {
	Tgid, Uid, Gid uint32
}

// ErrDiscarded: the file was unlinked (or lost a race to start) before it
// was published; writes to it are dropped, as on a plain filesystem.
var ErrDiscarded = errors.New("file discarded before it was published")

// ErrDone: the descriptor's file is published or discarded.
var ErrDone = errors.New("file no longer being written")

// Draft is one file being written, not yet published: its publish
// rules (owner, staging name, verdict) around the memory-tier file.
type Draft struct {
	s     *Store
	key   format.Key // what it publishes as
	wk    writeKey
	owner Proc
	pw    *tiers.PendingWrite
	f     *os.File // pw.File(); nil while parked; closed by the stack once done is set
	seq   uint64

	mu       sync.RWMutex     // writes hold it shared, publish exclusively
	descs    map[*Writer]bool // open descriptors: true once the owner closed it
	closed   bool             // the owner closed a descriptor of it
	staging  bool             // not renamed yet: publishes only at rename
	synced   bool             // fsynced while staging: it publishes durable
	done     bool             // published or discarded
	verdict  error            // of the publish (ErrDiscarded when discarded)
	mine     bool             // this file is what was published (not a copy already there)
	idle     time.Time        // when its last descriptor went (zero while one is open)
	parked   bool             // a staging file with no descriptor: f is closed (parkLocked)
	copyOut  bool             // publish a copy of f, not f (Sync with passthrough)
	copied   bool             // a copy was published; f stays until the last release
	copyAt   time.Time        // f's mtime when its copy was published
	size     int64            // once done, or while parked
	mtime    time.Time        // once done, or while parked
	setMTime time.Time        // set by utimes while written (zero: none)
	fill     *fillMark        // a File: its bytes when they last matched a published version (writes_versions.go)

	// failed is the first write the daemon refused or failed (past
	// MaxFileSize, over a share or the budget, the filesystem's error):
	// the file is then not what its writer meant, and never publishes
	// (publishOnce).
	failed atomic.Pointer[error]
}

// Writer is one open descriptor of a Draft: what a front end writes
// through, syncs and closes.
type Writer struct{ w *Draft }

// Key is what the file publishes as.
func (w *Draft) Key() format.Key { return w.key }

// Name is the file's name in its shard directory.
func (w *Draft) Name() string {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.wk.name
}

// Seq is a number of the file's own, unique in the mount.
func (w *Draft) Seq() uint64 { return w.seq }

// Owner is the process that made the file.
func (w *Draft) Owner() Proc { return w.owner }

// OpenMode is how a descriptor of a file being written is opened.
type OpenMode struct {
	Staging bool // the name is a staging name: the file publishes at its rename
	Excl    bool // O_EXCL: an existing file, or an id already published, is tiers.ErrExist
	Trunc   bool // O_TRUNC: the file is emptied
	// Direct is O_DIRECT: a new file of a files model is staged on the
	// first nvme tier, not in memory (tiers.Stack.CreateOnDisk).
	Direct bool
}

// Begin opens a descriptor on the file name (standing for key) that
// p writes, starting it if there is none.
func (ws Writes) Begin(p Proc, key format.Key, name string, m OpenMode) (*Draft, *Writer, error) {
	w, d, _, err := ws.s.beginWrite(p, key, name, m)
	return w, d, err
}

// beginWrite is Writes.Begin, also reporting whether this call started the
// file (a new, empty one) rather than joined one being written.
func (s *Store) beginWrite(p Proc, key format.Key, name string, m OpenMode) (w *Draft, d *Writer, started bool, err error) {
	staging, excl, trunc := m.Staging, m.Excl, m.Trunc
	wk := writeKeyOf(key, name, staging, p)
	w = s.writes.get(wk)
	if w != nil && excl {
		return nil, nil, false, fmt.Errorf("%s is being written: %w", name, tiers.ErrExist)
	}
	if excl && registry.Of(key).Replaces() && s.stack.Has(key) {
		return nil, nil, false, fmt.Errorf("%s: %w", key, tiers.ErrExist)
	}
	for try := 0; ; try++ {
		started = false
		if w == nil {
			fresh, err := s.startWrite(key, wk, m, p)
			if err != nil {
				return nil, nil, false, err
			}
			if excl {
				if err := s.claimExcl(wk, fresh, key, name); err != nil {
					return nil, nil, false, err
				}
				w, started = fresh, true
			} else if w = s.writes.put(wk, fresh); w != fresh { // another thread won
				fresh.Discard()
			} else {
				started = true
			}
		}
		d, err = w.Open(trunc)
		if !errors.Is(err, ErrDone) || try == 2 {
			return w, d, started, err
		}
		// Published or discarded since it was found, and not yet out of
		// the table (end): the next file of the name starts afresh.
		s.writes.drop(wk, w)
		w = nil
	}
}

// claimExcl enters fresh, an O_EXCL create's new file, in the write table
// unless anyone writes its name (putExcl), then checks that no writer
// published the name since the caller looked: a writer publishes before
// it leaves the table. On refusal fresh is discarded (tiers.ErrExist).
func (s *Store) claimExcl(wk writeKey, fresh *Draft, key format.Key, name string) error {
	if !s.writes.putExcl(wk, fresh) {
		fresh.Discard()
		return fmt.Errorf("%s is being written: %w", name, tiers.ErrExist)
	}
	if registry.Of(key).Replaces() && s.stack.Has(key) {
		fresh.Discard()
		return fmt.Errorf("%s: %w", key, tiers.ErrExist)
	}
	return nil
}

// startWrite makes a new Draft. A staging file may stand for a block
// already published (rsync writes it again): publishing it keeps one copy.
func (s *Store) startWrite(key format.Key, wk writeKey, m OpenMode, p Proc) (*Draft, error) {
	staging := m.Staging
	if s.Stopped() {
		return nil, fmt.Errorf("shutting down: %w", ErrStopped)
	}
	s.refreshUser(p.Uid) // what passthrough wrote for p.Uid
	if err := s.admitPending(p.Uid, 0, true); err != nil {
		return nil, err
	}
	var pw *tiers.PendingWrite
	var err error
	replaces := s.Models().LayoutOf(key.Model).Replaces()
	switch {
	case m.Direct && replaces:
		pw, err = s.stack.CreateOnDisk(key)
	case staging || replaces:
		pw, err = s.stack.CreateStaging(key)
	default:
		pw, err = s.stack.Create(key)
	}
	if err != nil {
		return nil, err
	}
	if replaces {
		pw.SetReplace() // a files model: the new version replaces the published one
	}
	s.Writes().Started(key)
	w := &Draft{
		s: s, key: key, wk: wk, owner: p, pw: pw, f: pw.File(), staging: staging,
		seq: s.writeSeq.Add(1), descs: make(map[*Writer]bool),
	}
	s.pendingFile(w, p.Uid)
	return w, nil
}

// Open adds a descriptor (for writing or reading back); trunc empties the
// file first.
func (w *Draft) Open(trunc bool) (*Writer, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return nil, fmt.Errorf("%s: %w", w.key, ErrDone)
	}
	if err := w.unparkLocked(); err != nil {
		return nil, err
	}
	if trunc {
		if err := w.f.Truncate(0); err != nil {
			return nil, err
		}
	}
	d := &Writer{w: w}
	w.descs[d] = false
	w.idle = time.Time{}
	return d, nil
}

// File is the file being written (its descriptor is what a kernel writes
// directly with FUSE passthrough).
func (d *Writer) File() *os.File { return d.w.f }

// OnDisk reports whether the file is staged on a directory tier
// (OpenMode.Direct).
func (d *Writer) OnDisk() bool { return d.w.pw.OnDisk() }

// DirectFile is the file's descriptor opened O_DIRECT, when it is staged
// on a directory tier (nil otherwise).
func (d *Writer) DirectFile() *os.File {
	w := d.w
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.f == nil {
		return nil // parked
	}
	return w.pw.DirectFile()
}

// WriteAt writes at any offset within MaxFileSize (ErrTooBig past it). A
// write to a discarded file is accepted and dropped. A write refused or
// failed here marks the file failed: it never publishes (publishOnce).
func (d *Writer) WriteAt(data []byte, off int64) (int, error) {
	w := d.w
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.done && errors.Is(w.verdict, ErrDiscarded) {
		return len(data), nil
	}
	if w.done {
		return 0, fmt.Errorf("already published: %w", ErrImmutable)
	}
	n, err := w.writeAt(data, off)
	if err != nil {
		w.failed.CompareAndSwap(nil, &err)
	}
	return n, err
}

// writeAt is WriteAt's write (under mu, shared).
func (w *Draft) writeAt(data []byte, off int64) (int, error) {
	if off+int64(len(data)) > w.s.MaxFileSize() {
		return 0, fmt.Errorf("%d bytes at %d pass the %d-byte limit: %w", len(data), off, w.s.MaxFileSize(), ErrTooBig)
	}
	if err := w.s.admitWrite(w, off+int64(len(data)), w.owner.Uid, 0, false); err != nil {
		return 0, err
	}
	n, err := w.pw.WriteAt(data, off)
	if tiers.IsNoSpace(err) && w.s.stack.MemFull(int64(len(data)-n)) {
		// The memory tier's filesystem was full with room in its
		// capacity (tiers.Stack.MemFull made some): the rest, once more.
		m, err2 := w.f.WriteAt(data[n:], off+int64(n))
		n, err = n+m, err2
	}
	return n, err
}

// ReadAt reads back what was written; ErrDone once it is published.
func (d *Writer) ReadAt(dest []byte, off int64) (int, error) {
	w := d.w
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.done {
		return 0, ErrDone
	}
	n, err := w.f.ReadAt(dest, off)
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return n, err
}

// Allocate preallocates (fallocate) within MaxFileSize.
func (d *Writer) Allocate(off, size uint64, mode uint32) error {
	w := d.w
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.done {
		return ErrImmutable
	}
	if off+size > uint64(w.s.MaxFileSize()) {
		return ErrTooBig
	}
	return unix.Fallocate(int(w.f.Fd()), mode, int64(off), int64(size))
}

// Close is a close() of the descriptor by process tgid. From the creating
// process it marks the descriptor closed, and when every descriptor is
// (and the file is not a staging file) publishes. It returns the verdict
// whether this call published, and the verdict (nil once published or
// already present; ErrInvalid, ErrNoSpace, ErrTooBig, ErrQuota,
// ErrNotFound for a sidecar without its block). From any other process it
// changes nothing and returns the verdict so far.
func (d *Writer) Close(ctx context.Context, tgid uint32) (published bool, verdict error) {
	w := d.w
	if tgid != w.owner.Tgid {
		return false, w.Verdict()
	}
	if err := w.writtenAfterCopy(); err != nil {
		return false, err
	}
	w.mu.Lock()
	w.s.pendingSize(w) // what passthrough wrote counts from here on
	if _, open := w.descs[d]; open {
		w.descs[d] = true
	}
	w.closed = true
	ready := !w.done && !w.staging && w.allClosed() && !w.unwrittenLocked()
	var touched time.Time
	if !ready && !w.done {
		touched = w.touchedLocked()
	}
	w.mu.Unlock()
	if !touched.IsZero() {
		// Its bytes unchanged, its times set (touch -d): the published
		// version takes them before the close returns.
		_ = w.s.stack.SetMTime(w.key, touched)
	}
	if !ready {
		return false, w.Verdict()
	}
	return w.publish(ctx, false)
}

// emptyLocked reports whether nothing was written to the file yet (under
// mu). A close then does not publish: a shell's `cat blk > path` opens
// the file, moves the descriptor to stdout with dup2 and closes the
// original before cat writes a byte, and the kernel sends that close
// like any other. An empty file can never be a valid block, so waiting
// loses nothing: the next close publishes, or the last descriptor's
// release does (and a file left empty is refused there, logged, with no
// caller to tell).
func (w *Draft) emptyLocked() bool {
	if w.f == nil {
		return false // parked: it was closed before, and not published for being empty then
	}
	st, err := w.f.Stat()
	return err == nil && st.Size() == 0
}

// Sync publishes and returns once the block is durable on the first
// persistent tier. A staging file is not published: it is kept until its
// rename, which then publishes it durable (synced). direct says the
// kernel writes the file itself (FUSE passthrough): then a copy is
// published (copyOf), since the descriptor that synced stays open and
// the kernel would write whatever it writes next into the published file.
func (d *Writer) Sync(ctx context.Context, direct bool) (published bool, verdict error) {
	w := d.w
	if registry.Of(w.key).Replaces() && !w.IsStaging() {
		return d.SyncVersion(ctx) // the writer writes on: writes_versions.go
	}
	w.mu.Lock()
	staging := w.staging && !w.done
	if !w.done && !w.staging && direct {
		w.copyOut = true // a staging file publishes at its rename, as is
	}
	if staging {
		// Its name is no block's: what the fsync asks is kept for the
		// rename, which returns once the file is durable under its new
		// name (write, fsync, rename: how a file is made to survive).
		w.synced = true
	}
	w.mu.Unlock()
	if staging {
		return false, nil
	}
	return w.publish(ctx, true)
}

// Draft is the file the descriptor writes.
func (d *Writer) Draft() *Draft { return d.w }

// Unheld reports whether no descriptor of the file is open (an unnamed
// file, O_TMPFILE's, then can never be named: the front end discards it).
func (w *Draft) Unheld() bool {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return len(w.descs) == 0 && !w.done
}

// Release ends the descriptor. The last one of a file that the creating
// process closed publishes it if that has not happened yet (a descriptor
// only another process held); one nobody closed is discarded. A staging
// file outlives its descriptors until rename or unlink. published says
// whether this release published the file.
func (d *Writer) Release(ctx context.Context) (published bool) {
	w := d.w
	w.mu.Lock()
	delete(w.descs, d)
	last := len(w.descs) == 0
	if last {
		w.idle = time.Now()
	}
	publish := !w.done && !w.staging && w.closed && w.allClosed()
	discard := !w.done && !w.staging && last && !w.closed
	var touched time.Time
	if publish && last && w.sameAsFillLocked() {
		publish, discard = false, true // a reopened File left as it was
		touched = w.touchedLocked()
	}
	// Both now, not after mu: an open that joined the file in between
	// would write into a published or discarded one.
	if discard {
		discard = w.discardLocked()
	}
	if publish {
		w.done = true
		w.verdict = w.publishOnce(ctx, false)
	}
	check := last && w.done && w.mine
	if last && !w.done && w.staging {
		w.parkLocked()
	}
	dropOrig := last && w.copied
	w.mu.Unlock()
	if dropOrig {
		w.s.stack.Abort(w.pw) // the file the kernel wrote, kept beside the copy published
	}
	if publish || discard {
		w.end()
	}
	if !touched.IsZero() {
		_ = w.s.stack.SetMTime(w.key, touched) // gone meanwhile: nothing to touch
	}
	if check {
		w.checkUnchanged()
	}
	return publish && w.Verdict() == nil
}

// checkUnchanged, at the release of the last descriptor of a file that
// published, removes the block if it was written after it was published:
// through a descriptor kept open past the publish (an fsync publishes, and
// a forked child shares its parent's descriptor past the close that
// publishes), which with FUSE passthrough the kernel writes straight into
// the memory tier's file (or the nvme tier's, for a file staged there). A
// published block never changes; one that did is not trusted, from any
// tier. Readers that opened it in the meantime may
// have read the change: the error line says so.
func (w *Draft) checkUnchanged() {
	if unchanged, held := w.s.stack.Unchanged(w.key); !held || unchanged {
		return
	}
	err := w.s.stack.Remove(w.key)
	w.s.log.Error("a block was written after it was published: removed from every tier (readers that opened it meanwhile may have read the change)",
		"key", w.key.Path(), "writer_uid", w.owner.Uid, "err", err)
}

// allClosed reports whether the owner closed every open descriptor
// (under mu).
func (w *Draft) allClosed() bool {
	for _, closed := range w.descs {
		if !closed {
			return false
		}
	}
	return true
}

// Verdict is the publish's verdict so far (nil before it, or once
// published).
func (w *Draft) Verdict() error {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.verdict
}

// Discard drops a file that will not be published (unlinked, or a
// duplicate start) and ends its write.
func (w *Draft) Discard() {
	w.mu.Lock()
	gone := w.discardLocked()
	w.mu.Unlock()
	if gone {
		w.end()
	}
}

// discardLocked marks the file discarded and drops its data (under mu);
// it reports whether it did, and the caller then calls end once mu is
// released. Deciding and discarding under one hold of mu matters: an
// open that joins the file in between would write into a discarded file,
// whose writes are dropped without an error.
func (w *Draft) discardLocked() bool {
	if w.done {
		return false
	}
	w.done = true
	w.verdict = fmt.Errorf("%s: %w", w.key, ErrDiscarded)
	w.s.stack.Abort(w.pw)
	return true
}

// end takes the file out of the table and ends its write.
func (w *Draft) end() {
	w.s.pendingDone(w)
	if w.parked { // discarded while parked; nothing parks a done file again
		w.s.parked.Add(-1)
	}
	w.s.writes.drop(w.wk, w)
	w.s.Writes().Ended(w.key)
}

// Writable reports whether the file is still being written.
func (w *Draft) Writable() bool {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return !w.done
}

// IsStaging reports whether the file is a staging file not yet renamed.
func (w *Draft) IsStaging() bool {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.staging && !w.done
}

// Rename publishes a staging file under the final name it stands for: at
// once when no descriptor of it is open, or all are closed by the writer
// (the verdict is returned), else when the creating process has closed
// them all (nil now).
func (w *Draft) Rename(ctx context.Context) error {
	if err := w.roomToPublish(w.key.Model); err != nil {
		return err
	}
	return w.rename(ctx, false)
}

// rename is Rename. With own set (a File renamed to another name of its
// model, RenameTo), a file that a descriptor still holds open stays its
// process's under the new name (Writes.Own) until its last release
// publishes it, as a renamed file is on a local disk at once; the
// process's own file under that name before is discarded, as the one a
// rename replaces is.
func (w *Draft) rename(ctx context.Context, own bool) error {
	w.mu.Lock()
	w.staging = false
	ready := !w.done && w.allClosed()
	w.closed = true
	w.s.writes.drop(w.wk, w) // the table's mutex is a leaf
	var replaced *Draft
	if own && !ready && !w.done {
		w.wk = writeKeyOf(w.key, w.key.FileName(), false, w.owner)
		replaced = w.s.writes.replace(w.wk, w)
	}
	w.mu.Unlock()
	if replaced != nil {
		replaced.Discard()
	}
	if !ready {
		return nil
	}
	_, err := w.publish(ctx, false)
	return err
}

// Attr describes the file as its writers see it: its size and mtime, and
// whether it is published (then size and mtime are the published file's).
func (w *Draft) Attr() (size int64, mtime time.Time, published bool) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.done {
		return w.size, w.mtime, true
	}
	mtime = time.Now()
	if w.f == nil {
		size, mtime = w.size, w.mtime // parked: as it was then
	} else if st, err := w.f.Stat(); err == nil {
		size, mtime = st.Size(), st.ModTime()
	}
	if !w.setMTime.IsZero() {
		mtime = w.setMTime
	}
	return size, mtime, false
}

// Setattr changes the file being written: a new size (within
// MaxFileSize), and new times, kept: the published file takes the mtime
// its writer set last (rsync restores the source's, so its second run
// finds nothing to copy). After publish every change is ErrImmutable.
func (w *Draft) Setattr(size *int64, mtime *time.Time) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return fmt.Errorf("already published: %w", ErrImmutable)
	}
	if mtime != nil {
		w.setMTime = *mtime
	}
	if size == nil {
		return nil
	}
	if *size > w.s.MaxFileSize() {
		return ErrTooBig
	}
	if err := w.unparkLocked(); err != nil {
		return err
	}
	err := w.f.Truncate(*size)
	if len(w.descs) == 0 && w.staging {
		w.parkLocked() // truncate(2) by name of a parked file
	}
	return err
}

// parkLocked closes the descriptor of a staging file that no descriptor
// writes any more, waiting for its rename (under mu): an idle file holds
// none of the daemon's descriptors. Its size and mtime are kept for Attr
// (w.size, w.mtime: nothing changes it while parked).
func (w *Draft) parkLocked() {
	if w.f == nil {
		return
	}
	if st, err := w.f.Stat(); err == nil {
		w.size, w.mtime = st.Size(), st.ModTime()
	}
	w.s.pendingSize(w)
	w.pw.Park()
	w.f, w.parked = nil, true
	w.s.parked.Add(1)
}

// unparkLocked opens a parked file again (under mu).
func (w *Draft) unparkLocked() error {
	if w.f != nil {
		return nil
	}
	if err := w.pw.Unpark(); err != nil {
		return err
	}
	w.f, w.parked = w.pw.File(), false
	w.s.parked.Add(-1)
	return nil
}
