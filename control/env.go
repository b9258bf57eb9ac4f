package control

import (
	"context"
	"log/slog"

	"github.com/ucmfs/ucmfs/gpu"
	"github.com/ucmfs/ucmfs/store"
)

// Dir is the name of the control directory in the mount's root.
const Dir = ".ucm"

// Env is what every session of one mount shares: the store, the GPU
// device, and how the front end names errors.
type Env struct {
	store *store.Store // the core: models, blocks, pins, counters
	// GPU is the device .ucm/gpu moves blocks to and from; nil: the mount
	// has no .ucm/gpu.
	GPU gpu.Device
	// GPUSocket passes VMM descriptors to register vmm (ListenGPU); nil:
	// the mount has none, and register vmm is refused.
	GPUSocket *GPUSocket
	// Log gets one line per refused request (default: the store's).
	Log *slog.Logger
	// ErrName names the errno an error stands for in an answer line
	// ("EINVAL"), and whether the error was an expected one. The front end
	// supplies it: errors become errnos in one place.
	ErrName func(error) (name string, known bool)
}

// NewEnv returns the environment of the sessions of st's mount.
func NewEnv(st *store.Store, errName func(error) (string, bool)) *Env {
	return &Env{store: st, GPU: st.GPU(), Log: st.Logger(), ErrName: errName}
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

// File is one session control file under .ucm/.
type File struct {
	// Name is the file's name in .ucm/.
	Name string
	// open starts the handler of a new session.
	open func(e *Env) handler
	// enabled reports whether the mount shows the file (nil: always).
	enabled func(e *Env) bool
}

// files are the registered session control files.
var files []File

// register adds a session control file; each file's init calls it.
func register(f File) { files = append(files, f) }

// Files returns the session control files the mount of e shows.
func Files(e *Env) []File {
	var out []File
	for _, f := range files {
		if f.enabled == nil || f.enabled(e) {
			out = append(out, f)
		}
	}
	return out
}

// Caller is who sent a request, as the kernel told the front end.
type Caller struct {
	Uid, Gid, Pid uint32
}

type callerKey struct{}

// WithCaller returns ctx carrying the caller of a request.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerOf returns the caller ctx carries; ok is false for a request from
// inside the daemon.
func CallerOf(ctx context.Context) (c Caller, ok bool) {
	c, ok = ctx.Value(callerKey{}).(Caller)
	return c, ok
}
