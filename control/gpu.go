package control

import (
	"context"
	"strconv"

	"github.com/ucmfs/ucmfs/gpu"
)

// .ucm/gpu: the GPU data path between the memory tier and engine memory.
//
//	register sim <path> <size> [offset=N]                              ->  ok region=<r>
//	register cuda <handle> <size> [offset=N] [uuid=GPU-...|device=N]   ->  ok region=<r>
//	register vmm <token> <size> [offset=N] [alloc=N] [uuid=...|device=N] ->  ok region=<r>
//	load <r> <model> <id>:<offset>[:<part>]...                         ->  ok loaded=<n> bytes=<b>
//	load <k,k,...>/<v,v,...> <model> <id>:<offset>[:<layers>]...       ->  ok loaded=<n> bytes=<b>
//	dump <r> <model> <id>:<offset>:<length>...                         ->  ok dumped=<n> existing=<m>
//	unregister <r>                                                     ->  ok
//
// A region belongs to the session that registered it: its number means
// nothing to another descriptor. The session's regions are a gpu.Session:
// unregister closes one, and when the descriptor is released (the engine
// closed it, or died) all of them are refused at once and closed. The
// register forms are in gpu_register.go (vmm's descriptor comes over the
// GPU socket, gpu_socket.go), load in gpu_load.go, dump in gpu_dump.go,
// the pinned staging both use in gpu_staging.go; docs/control.md has the
// grammar for engines.

// MaxRegions is the most regions one session may hold.
const MaxRegions = 256

func init() {
	register(File{Name: "gpu",
		open:    func(s *Env) handler { return newGPUSession(s) },
		enabled: func(s *Env) bool { return s.GPU != nil },
	})
}

// gpuSession answers the requests of one descriptor of .ucm/gpu.
type gpuSession struct {
	s       *Env
	sess    *gpu.Session
	regions map[uint64]*gpuRegion
	last    uint64 // the number of the last region registered

	// Kept between requests.
	items   []loadItem
	ops     []gpu.RegionOp
	staging *gpu.Staging // pinned host memory for dumps and unmapped loads
}

// newGPUSession starts a session on the mount's device.
func newGPUSession(s *Env) *gpuSession {
	return &gpuSession{s: s, sess: gpu.NewSession(s.GPU), regions: make(map[uint64]*gpuRegion)}
}

// gpuRegion is one registered region.
type gpuRegion struct {
	r    gpu.Region
	what string // for logs: "sim /dev/shm/kv", "cuda GPU-...", "vmm token 3"
}

// answer dispatches one request.
func (g *gpuSession) answer(ctx context.Context, req []byte, out []byte) ([]byte, error) {
	t := tokens{b: req}
	switch verb := t.next(); string(verb) {
	case "register":
		return g.register(ctx, &t, out)
	case "load":
		return g.load(ctx, &t, out)
	case "dump":
		return g.dump(ctx, &t, out)
	case "unregister":
		id, _, err := g.region(&t)
		if err != nil {
			return out, err
		}
		if !t.done() {
			return out, reqErr(ErrInvalid, "unexpected %q after the request", clip(t.next()))
		}
		g.drop(id)
		return append(out, "ok\n"...), nil
	default:
		return out, reqErr(ErrInvalid, "unknown gpu command %q: want register, load, dump or unregister", clip(verb))
	}
}

// close ends the session: every region is refused at once, then closed
// (gpu.Session.Close), and the staging buffer is released.
func (g *gpuSession) close() {
	g.s.store.Counters.GPURegions.Add(-int64(len(g.regions)))
	if err := g.sess.Close(); err != nil {
		g.s.Log.Warn("gpu: closing the regions of a session", "regions", len(g.regions), "err", err)
	}
	clear(g.regions)
	g.closeStaging()
	g.items, g.ops = nil, nil
}

// drop closes region id and forgets it.
func (g *gpuSession) drop(id uint64) {
	r := g.regions[id]
	delete(g.regions, id)
	g.s.store.Counters.GPURegions.Add(-1)
	if err := g.sess.CloseRegion(r.r); err != nil {
		g.s.Log.Warn("gpu: closing a region", "region", r.what, "err", err)
	}
}

// region reads a region number and finds it among the session's (EBADF
// when it is not one of them).
func (g *gpuSession) region(t *tokens) (uint64, *gpuRegion, error) {
	tok := t.next()
	if tok == nil {
		return 0, nil, reqErr(ErrInvalid, "missing region number")
	}
	return g.lookup(tok)
}

// lookup finds the region a token numbers.
func (g *gpuSession) lookup(tok []byte) (uint64, *gpuRegion, error) {
	id, err := strconv.ParseUint(string(tok), 10, 64)
	if err != nil {
		return 0, nil, reqErr(ErrInvalid, "region %q: not a region number", clip(tok))
	}
	r := g.regions[id]
	if r == nil {
		return 0, nil, reqErr(ErrBadRegion, "region %d is not registered in this session", id)
	}
	return id, r, nil
}

// simDevice reports whether the mount's device is the simulated one.
func (g *gpuSession) simDevice() bool { return g.s.GPU.Name() == "sim" }
