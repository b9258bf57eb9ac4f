package control

import (
	"context"
	"fmt"
	"strconv"

	"github.com/ucmfs/ucmfs/gpu"
	"github.com/ucmfs/ucmfs/tiers"
)

// .ucm/gpu: the GPU data path between the memory tier and engine memory.
//
//	register sim <path> <size> [offset=N]                 ->  ok region=<r>
//	register cuda <handle> <size> [offset=N] [device=N]   ->  ok region=<r>
//	load <r> <model> <id>:<offset>[:<part>]...            ->  ok loaded=<n> bytes=<b>
//	dump <r> <model> <id>:<offset>:<length>...            ->  ok dumped=<n> existing=<m>
//	unregister <r>                                        ->  ok
//
// A region belongs to the session that registered it: its number means
// nothing to another descriptor, and it is closed by unregister or when
// the descriptor is released. load is in control_gpu_load.go, dump in
// control_gpu_dump.go; docs/control.md has the grammar for engines.

// MaxRegions is the most regions one session may hold.
const MaxRegions = 256

func init() {
	register(File{Name: "gpu",
		open:    func(s *Env) handler { return &gpuSession{s: s, regions: make(map[uint64]*gpuRegion)} },
		enabled: func(s *Env) bool { return s.GPU != nil },
	})
}

// gpuSession answers the requests of one descriptor of .ucm/gpu.
type gpuSession struct {
	s       *Env
	regions map[uint64]*gpuRegion
	last    uint64 // the number of the last region registered

	// Buffers kept between requests.
	items []loadItem
	ops   []gpu.CopyOp
	buf   []byte // a block read from a file, or a dumped one
}

// gpuRegion is one registered region.
type gpuRegion struct {
	r    gpu.Region
	what string // for logs: "sim /dev/shm/kv", "cuda device 0"
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

// close unregisters the session's regions.
func (g *gpuSession) close() {
	for id := range g.regions {
		g.drop(id)
	}
	g.items, g.ops, g.buf = nil, nil, nil
}

// drop closes region id and forgets it.
func (g *gpuSession) drop(id uint64) {
	r := g.regions[id]
	delete(g.regions, id)
	g.s.Counters.GPURegions.Add(-1)
	if err := r.r.Close(); err != nil {
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

// register opens a region and gives it the next number.
func (g *gpuSession) register(ctx context.Context, t *tokens, out []byte) ([]byte, error) {
	if len(g.regions) >= MaxRegions {
		return out, reqErr(ErrTooManyRegions, "this session holds %d regions, the most it may: unregister one", MaxRegions)
	}
	dev := g.s.GPU
	var spec gpu.RegionSpec
	var what string
	switch kind := t.next(); string(kind) {
	case "sim":
		if !g.simDevice() {
			return out, reqErr(gpu.ErrNoDevice, "this mount's device is %s: register cuda <handle> <size>", dev.Name())
		}
		path := t.next()
		if path == nil {
			return out, reqErr(ErrInvalid, "missing the path of the shared-memory file")
		}
		what = "sim " + string(path)
		var err error
		if spec, err = regionOptions(t, false); err != nil {
			return out, err
		}
		f, err := openSimFile(ctx, string(path), spec)
		if err != nil {
			return out, err
		}
		defer f.Close()
		spec.Path = "/proc/self/fd/" + strconv.Itoa(int(f.Fd())) // the file checked, not what the path names now
	case "cuda":
		if g.simDevice() {
			return out, reqErr(gpu.ErrNoDevice, "this mount's device is sim (no CUDA driver): register sim <path> <size>")
		}
		handle := t.next()
		if handle == nil {
			return out, reqErr(ErrInvalid, "missing the CUDA IPC handle (128 hex digits)")
		}
		var err error
		if spec, err = regionOptions(t, true); err != nil {
			return out, err
		}
		spec.Handle = handle
		what = "cuda device " + strconv.Itoa(spec.DeviceIndex)
	default:
		return out, reqErr(ErrInvalid, "register %q: want register sim <path> <size> or register cuda <handle> <size>", clip(kind))
	}
	r, err := dev.OpenRegion(spec)
	if err != nil {
		return out, fmt.Errorf("register %s: %w", what, err)
	}
	g.last++
	g.regions[g.last] = &gpuRegion{r: r, what: what}
	g.s.Counters.GPURegions.Add(1)
	out = append(out, "ok region="...)
	out = strconv.AppendUint(out, g.last, 10)
	return append(out, '\n'), nil
}

// regionOptions reads "<size> [offset=N]" and, for CUDA, "[device=N]".
func regionOptions(t *tokens, cuda bool) (gpu.RegionSpec, error) {
	var spec gpu.RegionSpec
	tok := t.next()
	if tok == nil {
		return spec, reqErr(ErrInvalid, "missing the region size")
	}
	size, ok := parseCount(tok)
	if !ok {
		return spec, reqErr(ErrInvalid, "size %q: not a decimal byte count", clip(tok))
	}
	spec.Size = size
	for tok := t.next(); tok != nil; tok = t.next() {
		name, val, _ := cutByte(tok, '=')
		n, ok := parseCount(val)
		switch {
		case string(name) == "offset" && ok:
			spec.Offset = n
		case string(name) == "device" && cuda && ok && n <= 1<<20:
			spec.DeviceIndex = int(n)
		case cuda:
			return spec, reqErr(ErrInvalid, "option %q: want offset=N or device=N", clip(tok))
		default:
			return spec, reqErr(ErrInvalid, "option %q: want offset=N", clip(tok))
		}
	}
	return spec, nil
}

// parseCount parses a decimal count of at most MaxInt64.
func parseCount(tok []byte) (int64, bool) {
	if len(tok) == 0 || tok[0] < '0' || tok[0] > '9' {
		return 0, false
	}
	n, err := strconv.ParseInt(string(tok), 10, 64)
	return n, err == nil
}

// cutByte splits b at the first c.
func cutByte(b []byte, c byte) (before, after []byte, found bool) {
	for i, x := range b {
		if x == c {
			return b[:i], b[i+1:], true
		}
	}
	return b, nil, false
}

// HostPages adapts dev to the memory tier's registration hook
// (tiers.MemConfig.Host): every mapping the tier locks is registered with
// the device for DMA, read-only, as the tier maps it. The device must
// stay open until the memory tier is closed.
func HostPages(dev gpu.Device) tiers.HostRegistrar { return hostPages{dev} }

// hostPages is HostPages' registrar.
type hostPages struct{ dev gpu.Device }

// Register implements tiers.HostRegistrar.
func (h hostPages) Register(b []byte) error { return h.dev.RegisterHost(b, gpu.HostReadOnly) }

// Unregister implements tiers.HostRegistrar.
func (h hostPages) Unregister(b []byte) error { return h.dev.UnregisterHost(b) }
