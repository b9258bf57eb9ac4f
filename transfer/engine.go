// Package transfer is the GPU transfer engine behind .ucm/gpu: it moves
// blocks between the memory tier and engine memory. It holds the
// sessions (one per descriptor of .ucm/gpu, each with its registered
// regions), the registration of engine memory (a simulated device's
// shared-memory file opened with the caller's credentials, a CUDA IPC
// handle, a VMM descriptor passed over the GPU socket), and the load and
// dump paths with their pinned staging. A session speaks the control
// files' line grammar (package control/line); package control registers
// it as the file gpu, and the front end turns its errors into errnos.
//
// It imports store (pins, publishes and block files), gpu (the devices)
// and gpu/fdpass (the socket), never package tiers.
package transfer

import (
	"context"
	"errors"
	"log/slog"

	"github.com/ucmfs/ucmfs/control/line"
	"github.com/ucmfs/ucmfs/gpu"
	"github.com/ucmfs/ucmfs/store"
)

// Sentinels of refused GPU requests; the front end turns each into the
// errno in parentheses.
var (
	// ErrBadRegion: a region number the session did not register (EBADF).
	ErrBadRegion = errors.New("no such region")
	// ErrTooManyRegions: the session, or its user in all its sessions,
	// holds the most regions it may (EMFILE).
	ErrTooManyRegions = errors.New("too many regions")
	// ErrNoToken: register vmm names a token no descriptor waits under
	// for the caller: never given, taken already, expired, or another
	// user's (ENOENT).
	ErrNoToken = errors.New("no descriptor under that token")
	// ErrNoSocket: register vmm on a mount without the GPU socket
	// (ENOTSUP).
	ErrNoSocket = errors.New("no GPU socket")
	// ErrTooManyConns: a connection to the GPU socket past MaxConnsPerUser
	// or MaxConns (EMFILE).
	ErrTooManyConns = errors.New("too many connections to the GPU socket")
)

// RefuseFunc appends the answer line of a refused message to out ("err
// <ERRNO> <message>\n"), logging it: the control files' own refusal, so
// a GPU socket message is answered like a control request.
type RefuseFunc func(out []byte, file string, req []byte, err error) []byte

// Engine is the GPU transfer engine of one mount.
type Engine struct {
	store  *store.Store
	dev    gpu.Device
	log    *slog.Logger
	refuse RefuseFunc
	socket *Socket     // nil until OpenSocket
	quota  regionQuota // regions per uid (region_quota.go)
}

// New returns the engine moving st's blocks to and from dev.
func New(st *store.Store, dev gpu.Device, log *slog.Logger, refuse RefuseFunc) *Engine {
	st.ReportDevice(dev) // .ucm/stats and the metrics show it
	return &Engine{store: st, dev: dev, log: log, refuse: refuse}
}

// Device is the engine's device.
func (e *Engine) Device() gpu.Device { return e.dev }

// model reads the model token of a request: a valid name of a model the
// mount knows, that the caller of ctx may reach for want (EACCES; see
// control's controlModel): a load reads, a dump publishes.
func (e *Engine) model(ctx context.Context, t *line.Tokens, want uint32, what string) (string, error) {
	model, err := line.Model(t, e.store.Models().Exists, store.ErrNotFound)
	if err != nil {
		return model, err
	}
	return model, line.CheckModel(ctx, model, e.store.Models().Permits, want, what)
}
