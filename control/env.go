package control

import (
	"context"
	"log/slog"

	"github.com/ucmfs/ucmfs/gpu"
	"github.com/ucmfs/ucmfs/store"
	"github.com/ucmfs/ucmfs/transfer"
)

// Dir is the name of the control directory in the mount's root.
const Dir = ".ucm"

// Env is what every session of one mount shares: the store, the GPU
// transfer engine, and how the front end names errors.
type Env struct {
	store *store.Store // the core: models, blocks, pins, counters
	// GPU moves blocks to and from the mount's device for .ucm/gpu; nil:
	// the mount has no device and no .ucm/gpu.
	GPU *transfer.Engine
	// Log gets one line per refused request (default: the store's).
	Log *slog.Logger
	// ErrName names the errno an error stands for in an answer line
	// ("EINVAL"), and whether the error was an expected one. The front end
	// supplies it: errors become errnos in one place.
	ErrName func(error) (name string, known bool)

	sessions sessionCount // open sessions, per uid (File.OpenAs)
	memory   memBudget    // what sessions hold, per uid (budget.go)
}

// NewEnv returns the environment of the sessions of st's mount, logging
// to log (nil: the store's logger). dev is the device .ucm/gpu moves
// blocks to and from (CUDA or the simulated one); nil: the mount has no
// .ucm/gpu.
func NewEnv(st *store.Store, dev gpu.Device, log *slog.Logger, errName func(error) (string, bool)) *Env {
	if log == nil {
		log = st.Logger()
	}
	e := &Env{store: st, Log: log, ErrName: errName}
	if dev != nil {
		e.GPU = transfer.New(st, dev, log, e.refuse)
	}
	return e
}

// handler answers the requests of one session of one control file.
type handler interface {
	// answer handles one request (a line without its line end, not
	// blank) and appends exactly one answer line, ending in '\n', to
	// out. On error it returns it instead; the session then drops what
	// was appended and answers "err <ERRNO> <message>" (see Env.refuse).
	answer(ctx context.Context, req []byte, out []byte) ([]byte, error)
	// close ends the session: its descriptor was released.
	close()
}
