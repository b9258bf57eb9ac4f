package control

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ucmfs/ucmfs/control/line"
	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/store"
)

// .ucm/flush: make blocks durable, and answer when they are.
//
//	all                       ->  ok flushed
//	model <model>             ->  ok flushed
//	files <model> <file>...   ->  ok flushed=<n> missing=<m>
//
// Every dirty block (of every model, or of one) is written back to the
// first persistent tier and fsynced there (store.Store.Flush); then
// every directory tier's filesystem is synced (syncfs), so that blocks
// written back earlier in the background are durable too. A failure is
// "err <ERRNO> ..." (EIO for an I/O error; ETIMEDOUT for a tier that is
// Down or whose sync does not return within syncTimeout). A mount without a directory
// tier has nothing to make durable: it answers "ok flushed" at once.
//
// files makes only the files named durable, each written back and fsynced
// with its directory (tiers.Stack.Flush, by store.Store.Tiers): block
// ids, or for a files model paths relative to the model, as lookup names
// them; a file not stored is counted missing. It reads the model (search permission).
//
// A flush completes across an interrupt of the writer. The kernel sends
// FUSE_INTERRUPT whenever a signal reaches the writing thread (for a Go
// client, the runtime's preemption signal, SIGURG, many times a second),
// and go-fuse then cancels the request's context; answering EINTR would make
// every such client fail or start over. The work is bounded anyway (each
// tier's operation timeout, syncTimeout), it is idempotent, and a fatal
// signal still ends the client at once (the kernel waits killably).

// flushSession answers flush requests.
type flushSession struct {
	s    *Env
	ids  []format.ID
	keys []format.Key
}

// answer runs one flush.
func (f *flushSession) answer(ctx context.Context, req []byte, out []byte) ([]byte, error) {
	t := line.NewTokens(req)
	model := ""
	switch verb := t.Next(); string(verb) {
	case "all":
	case "model":
		m, err := f.s.controlModel(ctx, &t, store.AccessExec, "flush")
		if err != nil {
			return out, err
		}
		model = m
	case "files":
		return f.files(ctx, &t, out)
	default:
		return out, line.Err(line.ErrInvalid, "unknown flush command %q: want all, model <model> or files <model> <file>...", line.Clip(verb))
	}
	if !t.Done() {
		return out, line.Err(line.ErrInvalid, "unexpected %q after the request", line.Clip(t.Next()))
	}
	start := time.Now()
	f.s.store.Counters.Flushes.Add(1)
	err := f.s.store.Flush(context.WithoutCancel(ctx), model)
	store.ObserveSince(f.s.store.Latency.Flush, start)
	if err != nil {
		f.s.store.Counters.FlushErrors.Add(1)
		return out, fmt.Errorf("flush: %w", err)
	}
	return append(out, "ok flushed\n"...), nil
}

// files answers "files <model> <file>...".
func (f *flushSession) files(ctx context.Context, t *line.Tokens, out []byte) ([]byte, error) {
	model, err := f.s.controlModel(ctx, t, store.AccessExec, "flush")
	if err != nil {
		return out, err
	}
	keys, ids, err := f.s.parseKeys(t, model, f.keys[:0], f.ids)
	f.keys, f.ids = line.Keep(keys), line.Keep(ids)
	if err != nil {
		return out, err
	}
	start := time.Now()
	f.s.store.Counters.Flushes.Add(1)
	defer store.ObserveSince(f.s.store.Latency.Flush, start)
	flushed, missing := 0, 0
	for _, k := range keys {
		switch err := f.s.store.Tiers().Flush(context.WithoutCancel(ctx), k); {
		case err == nil:
			flushed++
		case errors.Is(err, store.ErrNotFound):
			missing++
		default:
			f.s.store.Counters.FlushErrors.Add(1)
			return out, fmt.Errorf("flush %s: %w", k.Path(), err)
		}
	}
	return fmt.Appendf(out, "ok flushed=%d missing=%d\n", flushed, missing), nil
}

// close has nothing to release.
func (f *flushSession) close() {}
