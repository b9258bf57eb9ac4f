package dir

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/ucmfs/ucmfs/tiers/rootfs"
	"github.com/ucmfs/ucmfs/tiers/tier"
	"golang.org/x/sys/unix"
)

// Health is the state of a directory tier (tier.Health).
//
//	Up        operations run normally.
//	Unstable  the directory answered with I/O errors (EIO, ETIMEDOUT,
//	          ESTALE), or has just come back from Down; operations run, and
//	          upAfter successes in a row make it Up again.
//	Down      an operation found no answer within the timeout (a stalled
//	          NFS mount), or a FUSE mount lost its daemon (ENOTCONN).
//	          Operations fail fast with ErrStalled instead of piling up
//	          blocked goroutines; a probe (statfs of the root, every
//	          Config.ProbeInterval, a second by default) makes it
//	          Unstable when the directory answers again.
//
// I/O errors alone never take a tier Down: the directory answers, so
// callers get the errno (errors.Is(err, syscall.EIO)) and decide.
type Health = tier.Health

// The states of a directory tier; see Health.
const (
	Up       = tier.Up
	Unstable = tier.Unstable
	Down     = tier.Down
)

// upAfter is the number of successes in a row that take Unstable to Up.
const upAfter = 3

// DefaultProbeInterval is the period of the health probe when
// Config.ProbeInterval is 0: a tier Down is back within a second of its
// directory answering again, for one statfs a second.
const DefaultProbeInterval = time.Second

// healthState is a tier's Health and its counters, all atomics.
type healthState struct {
	state  atomic.Int32
	okRun  atomic.Int32          // successes in a row while Unstable
	reason atomic.Pointer[error] // why a failing write took it Down (ErrReadOnly, ErrTierFailed); nil for a stall
}

func (h *healthState) get() Health { return Health(h.state.Load()) }

// ioFailure reports errors that say the directory itself is failing, as
// opposed to answers about a file (ENOENT, EEXIST, ENOSPC...).
func ioFailure(err error) bool {
	return errors.Is(err, unix.EIO) || errors.Is(err, unix.ETIMEDOUT) ||
		errors.Is(err, unix.ESTALE) || errors.Is(err, unix.ENOTCONN)
}

// writeOps are the operations that write: EROFS or EIO there means the
// tier cannot take blocks (a read-only remount, a failing disk).
var writeOps = map[string]bool{"create": true, "write": true, "commit": true, "fsync": true, "publish": true, "mkdir": true}

// observe records the outcome of operation op that answered in time. It
// reports whether it took the tier Down: ENOTCONN always, EROFS, and EIO
// from a write (with the reason kept, see failing); other I/O errors make
// it Unstable.
func (h *healthState) observe(op string, err error) bool {
	if err == nil || !ioFailure(err) && !errors.Is(err, unix.EROFS) {
		if h.get() == Unstable && h.okRun.Add(1) >= upAfter {
			h.state.CompareAndSwap(int32(Unstable), int32(Up))
		}
		return false
	}
	h.okRun.Store(0)
	switch {
	case errors.Is(err, unix.ENOTCONN):
		return h.setDown()
	case errors.Is(err, unix.EROFS):
		return h.setFailing(tier.ErrReadOnly)
	case errors.Is(err, unix.EIO) && writeOps[op]:
		return h.setFailing(tier.ErrTierFailed)
	}
	h.state.CompareAndSwap(int32(Up), int32(Unstable))
	return false
}

// setFailing makes the tier Down because writes fail with reason.
func (h *healthState) setFailing(reason error) bool {
	h.reason.Store(&reason)
	return h.setDown()
}

// failing is the reason a failing write took the tier Down, nil if none.
func (h *healthState) failing() error {
	if r := h.reason.Load(); r != nil {
		return *r
	}
	return nil
}

// setDown makes the tier Down and reports whether it was not already.
func (h *healthState) setDown() bool {
	h.okRun.Store(0)
	return Health(h.state.Swap(int32(Down))) != Down
}

// Health reports the tier's state.
func (t *Tier) Health() Health { return t.health.get() }

// Stalled is the error of an operation that did not get an answer in time
// or did not run because the tier is Down.
func (t *Tier) Stalled(op string) error {
	if reason := t.health.failing(); reason != nil {
		return fmt.Errorf("%s tier %s: %s: %w (down until it takes writes again): %w", t.kind, t.root, op, reason, tier.ErrStalled)
	}
	return fmt.Errorf("%s tier %s: %s: %w", t.kind, t.root, op, tier.ErrStalled)
}

// do runs the filesystem operation fn under the tier's timeout. It fails
// fast with ErrClosed once closed and with ErrStalled while Down.
//
// On a shared kind (nfs, ds3fs) fn runs in its own goroutine: if it does
// not return in time, do marks the tier Down and returns ErrStalled; fn
// keeps running (a blocked syscall cannot be cancelled), and late, if not
// nil, runs after fn to undo what it did for a caller that has gone.
//
// On a local disk (nvme) fn runs inline, which saves a goroutine, a timer
// and two wake-ups per operation: an operation past the timeout takes
// the tier Down through the watchdog (watchLoop), so other operations
// fail fast, but its caller waits for the answer; late is never needed.
func (t *Tier) do(op string, fn func() error, late func()) error {
	if t.closed.Load() {
		return t.errClosed(op)
	}
	if t.health.get() == Down {
		return t.Stalled(op)
	}
	if t.inline {
		return t.runInline(op, fn)
	}
	return t.run(op, fn, late)
}

// runInline runs fn on the caller's goroutine, watched by watchLoop.
func (t *Tier) runInline(op string, fn func() error) error {
	id := t.watch.begin(op)
	err := fn()
	t.watch.end(id)
	if t.health.observe(op, t.healthErr(err)) {
		t.log.Warn("tier down: "+t.downWhy(), "kind", t.kind, "dir", t.root, "op", op, "err", err)
	}
	return err
}

// Run states of one operation.
const (
	opRunning int32 = iota
	opDelivered
	opAbandoned
)

// run runs fn in its own goroutine under the timeout; it is do without
// the fail-fast checks (the probe uses it while Down).
func (t *Tier) run(op string, fn func() error, late func()) error {
	var state atomic.Int32
	done := make(chan error, 1)
	go func() {
		err := fn()
		if state.CompareAndSwap(opRunning, opDelivered) {
			done <- err
			return
		}
		if late != nil {
			late()
		}
		t.stuck.Add(-1)
	}()
	timer := time.NewTimer(t.timeout)
	defer timer.Stop()
	select {
	case err := <-done:
		if t.health.observe(op, t.healthErr(err)) {
			t.log.Warn("tier down: "+t.downWhy(), "kind", t.kind, "dir", t.root, "op", op, "err", err)
		}
		return err
	case <-timer.C:
		t.stuck.Add(1)
		if !state.CompareAndSwap(opRunning, opAbandoned) {
			t.stuck.Add(-1)
			err := <-done // answered just in time
			t.health.observe(op, t.healthErr(err))
			return err
		}
		if t.health.setDown() {
			t.log.Warn("tier down: no answer in time", "kind", t.kind, "dir", t.root, "op", op, "timeout", t.timeout)
		}
		return t.Stalled(op)
	}
}

// probeLoop runs probe every probeEvery (a second), and the watchdog of inline
// operations every quarter of the timeout, until Close.
func (t *Tier) probeLoop() {
	defer t.wg.Done()
	tick := time.NewTicker(t.probeEvery)
	defer tick.Stop()
	var watch <-chan time.Time
	if t.inline {
		wt := time.NewTicker(max(t.timeout/4, time.Millisecond))
		defer wt.Stop()
		watch = wt.C
	}
	for {
		select {
		case <-t.stop:
			return
		case <-tick.C:
			t.probe()
		case <-watch:
			t.checkStalls()
		}
	}
}

// checkStalls takes the tier Down when an inline operation has been
// waiting for the directory longer than the timeout.
func (t *Tier) checkStalls() {
	op, since, ok := t.watch.oldest()
	if !ok || time.Since(since) < t.timeout {
		return
	}
	if t.health.setDown() {
		t.log.Warn("tier down: no answer in time", "kind", t.kind, "dir", t.root, "op", op, "timeout", t.timeout)
	}
}

// probe asks the directory for its statfs (which, unlike a stat, goes to
// an NFS server or FUSE daemon every time). An answer takes a Down tier to
// Unstable. A probe still blocked from an earlier tick is not doubled.
func (t *Tier) probe() {
	if !t.probeBusy.CompareAndSwap(false, true) {
		return
	}
	defer t.probes.Add(1)
	if t.lostRoot() {
		t.reattach()
		t.probeBusy.Store(false)
		return
	}
	writes := t.health.failing() != nil
	var lost string
	err := t.run("probe", func() error {
		defer t.probeBusy.Store(false)
		if gone, why, err := t.fs.Gone(); err == nil && gone {
			lost = why
			return nil
		}
		var st unix.Statfs_t
		if err := t.fs.Statfs(&st); err != nil || !writes {
			return err
		}
		return probeWrite(t.fs)
	}, nil)
	if lost != "" {
		t.loseRoot(lost)
		return
	}
	if err == nil && t.health.state.CompareAndSwap(int32(Down), int32(Unstable)) {
		t.health.okRun.Store(0)
		t.health.reason.Store(nil)
		t.log.Info("tier answers again", "kind", t.kind, "dir", t.root)
	}
}

// probeWrite checks that the root takes writes again: a file created,
// written, fsynced and removed.
func probeWrite(root rootfs.FS) error {
	f, rel, err := root.CreateTemp(".", tier.TmpPrefix+"probe-", 0o600)
	if err != nil {
		return err
	}
	defer root.Unlink(rel)
	_, err = f.Write([]byte("ucmfs probe\n"))
	if err == nil {
		err = root.SyncFile(f)
	}
	return errors.Join(err, f.Close())
}

// downWhy says why the tier went Down, for its log line.
func (t *Tier) downWhy() string {
	switch reason := t.health.failing(); {
	case errors.Is(reason, tier.ErrReadOnly):
		return "the filesystem is read-only"
	case reason != nil:
		return "the filesystem fails writes"
	}
	return "the mount lost its server"
}

// healthErr is err as the tier's health sees it: on a shared tier ESTALE
// is another host's delete of a file (a miss), not a failing directory.
func (t *Tier) healthErr(err error) error { return t.share.healthErr(err) }
