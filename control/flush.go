package control

import (
	"context"
	"fmt"
	"time"

	"github.com/ucmfs/ucmfs/store"
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
	register(File{Name: "flush", open: func(s *Env) handler {
		return flushSession{s: s}
	}})
}

// flushSession answers flush requests.
type flushSession struct{ s *Env }

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
		return out, reqErr(ErrInvalid, "unknown flush command %q: want all or model <model>", clip(verb))
	}
	if !t.done() {
		return out, reqErr(ErrInvalid, "unexpected %q after the request", clip(t.next()))
	}
	start := time.Now()
	f.s.Counters.Flushes.Add(1)
	err := f.s.Flush(ctx, model)
	store.ObserveSince(f.s.Latency.Flush, start)
	if err != nil {
		f.s.Counters.FlushErrors.Add(1)
		return out, fmt.Errorf("flush: %w", err)
	}
	return append(out, "ok flushed\n"...), nil
}

// close has nothing to release.
func (f flushSession) close() {}
