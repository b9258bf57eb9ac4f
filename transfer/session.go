package transfer

import (
	"context"
	"strconv"

	"github.com/ucmfs/ucmfs/control/line"
	"github.com/ucmfs/ucmfs/gpu"
)

// The requests of a session of .ucm/gpu:
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
// register forms are in register.go (vmm's descriptor comes over the
// GPU socket, socket.go), load in load.go, dump in dump.go, the pinned
// staging both use in staging.go; docs/control.md has the grammar for
// engines.

// MaxRegions is the most regions one session may hold.
const MaxRegions = 256

// Session answers the requests of one descriptor of .ucm/gpu.
type Session struct {
	e       *Engine
	sess    *gpu.Session
	regions map[uint64]*gpuRegion
	last    uint64 // the number of the last region registered

	// Kept between requests.
	items   []loadItem
	ops     []gpu.RegionOp
	staging *gpu.Staging // pinned host memory for dumps and unmapped loads
}

// NewSession starts a session on the mount's device.
func (e *Engine) NewSession() *Session {
	return &Session{e: e, sess: gpu.NewSession(e.dev), regions: make(map[uint64]*gpuRegion)}
}

// gpuRegion is one registered region.
type gpuRegion struct {
	r    gpu.Region
	what string // for logs: "sim /dev/shm/kv", "cuda GPU-...", "vmm token 3"
	uid  uint32 // who registered it (regionQuota)
}

// Answer handles one request (a line without its line end, not blank)
// and appends its one answer line to out, or returns why it was refused.
func (g *Session) Answer(ctx context.Context, req []byte, out []byte) ([]byte, error) {
	t := line.NewTokens(req)
	switch verb := t.Next(); string(verb) {
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
		if !t.Done() {
			return out, line.Err(line.ErrInvalid, "unexpected %q after the request", line.Clip(t.Next()))
		}
		g.drop(id)
		return append(out, "ok\n"...), nil
	default:
		return out, line.Err(line.ErrInvalid, "unknown gpu command %q: want register, load, dump or unregister", line.Clip(verb))
	}
}

// close ends the session: every region is refused at once, then closed
// (gpu.Session.Close), and the staging buffer is released.
func (g *Session) Close() {
	g.e.store.Counters.GPURegions.Add(-int64(len(g.regions)))
	for _, r := range g.regions {
		g.e.quota.give(r.uid)
	}
	if err := g.sess.Close(); err != nil {
		g.e.log.Warn("gpu: closing the regions of a session", "regions", len(g.regions), "err", err)
	}
	clear(g.regions)
	g.closeStaging()
	g.items, g.ops = nil, nil
}

// drop closes region id and forgets it.
func (g *Session) drop(id uint64) {
	r := g.regions[id]
	delete(g.regions, id)
	g.e.store.Counters.GPURegions.Add(-1)
	g.e.quota.give(r.uid)
	if err := g.sess.CloseRegion(r.r); err != nil {
		g.e.log.Warn("gpu: closing a region", "region", r.what, "err", err)
	}
}

// region reads a region number and finds it among the session's (EBADF
// when it is not one of them).
func (g *Session) region(t *line.Tokens) (uint64, *gpuRegion, error) {
	tok := t.Next()
	if tok == nil {
		return 0, nil, line.Err(line.ErrInvalid, "missing region number")
	}
	return g.lookup(tok)
}

// lookup finds the region a token numbers.
func (g *Session) lookup(tok []byte) (uint64, *gpuRegion, error) {
	id, err := strconv.ParseUint(string(tok), 10, 64)
	if err != nil {
		return 0, nil, line.Err(line.ErrInvalid, "region %q: not a region number", line.Clip(tok))
	}
	r := g.regions[id]
	if r == nil {
		return 0, nil, line.Err(ErrBadRegion, "region %d is not registered in this session", id)
	}
	return id, r, nil
}

// simDevice reports whether the mount's device is the simulated one.
func (g *Session) simDevice() bool { return g.e.dev.Name() == "sim" }
