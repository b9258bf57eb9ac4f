package fs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/ucmfs/ucmfs/tiers"
	"golang.org/x/sys/unix"
)

// .ucm/flush: make blocks durable, and answer when they are.
//
//	all             ->  ok flushed
//	model <model>   ->  ok flushed
//
// Every dirty block (of every model, or of one) is written back to the
// first persistent tier and fsynced there (tiers.Stack.FlushAll); then
// every directory tier's filesystem is synced (syncfs), so that blocks
// written back earlier in the background are durable too. A failure is
// "err <ERRNO> ..." (EIO for an I/O error; ETIMEDOUT for a tier that is
// Down or whose sync does not return within syncTimeout; EINTR when the
// writer was interrupted). A mount without a directory
// tier has nothing to make durable: it answers "ok flushed" at once.

func init() {
	registerControl(controlSpec{name: "flush", ino: inoFlush, open: func(s *fsState) controlHandler {
		return flushSession{s: s}
	}})
}

// flushSession answers flush requests.
type flushSession struct{ s *fsState }

// answer runs one flush.
func (f flushSession) answer(ctx context.Context, req []byte, out []byte) ([]byte, error) {
	t := tokens{b: req}
	model := ""
	switch verb := t.next(); string(verb) {
	case "all":
	case "model":
		m, err := f.s.controlModel(&t)
		if err != nil {
			return out, err
		}
		model = m
	default:
		return out, reqErr(syscall.EINVAL, "unknown flush command %q: want all or model <model>", clip(verb))
	}
	if !t.done() {
		return out, reqErr(syscall.EINVAL, "unexpected %q after the request", clip(t.next()))
	}
	start := time.Now()
	f.s.ctl.flushes.Add(1)
	err := f.s.stack.FlushAll(ctx, model)
	if err == nil {
		err = f.s.syncTiers(ctx)
	}
	observeSince(f.s.metrics.flush, start)
	if err != nil {
		f.s.ctl.flushErrors.Add(1)
		return out, fmt.Errorf("flush: %w", err)
	}
	return append(out, "ok flushed\n"...), nil
}

// close has nothing to release.
func (f flushSession) close() {}

// syncTimeout bounds the sync of one tier's filesystem: a hung network
// filesystem must not hang the request (its kind's own operation timeout
// is at most 2 minutes).
const syncTimeout = 2 * time.Minute

// syncTiers syncs the filesystem of every directory tier, in parallel. A
// tier that is Down cannot be synced: its blocks are not known to be
// durable (ETIMEDOUT).
func (s *fsState) syncTiers(ctx context.Context) error {
	dirs := s.stack.Dirs()
	errs := make(chan error, len(dirs))
	for _, d := range dirs {
		if d.Health() == tiers.Down {
			errs <- fmt.Errorf("%s tier %s is down: %w", d.Name(), d.Dir(), tiers.ErrStalled)
			continue
		}
		go func() { errs <- syncfs(d.Dir()) }()
	}
	timer := time.NewTimer(syncTimeout)
	defer timer.Stop()
	var all []error
	for range dirs {
		select {
		case err := <-errs:
			all = append(all, err)
		case <-timer.C:
			return fmt.Errorf("syncfs of the directory tiers: no answer within %v: %w", syncTimeout, tiers.ErrStalled)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return errors.Join(all...)
}

// syncfs syncs the filesystem holding dir.
func syncfs(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.Syncfs(int(f.Fd())); err != nil {
		return fmt.Errorf("syncfs %s: %w", dir, err)
	}
	return nil
}
