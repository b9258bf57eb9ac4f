package transfer

import (
	"context"
	"fmt"
	"os"
	"strconv"

	"github.com/ucmfs/ucmfs/control/line"
	"github.com/ucmfs/ucmfs/gpu"
)

// register sim <path> <size> [offset=N]
// register cuda <handle> <size> [offset=N] [uuid=GPU-...|device=N]
// register vmm <token> <size> [offset=N] [alloc=N] [uuid=GPU-...|device=N]
//
// The engine names its GPU by uuid= (cuDeviceGetUuid, nvidia-smi's
// "GPU-..."), the same in every process whatever its
// CUDA_VISIBLE_DEVICES. device=N, the daemon's ordinal, is kept for
// engines written before uuid= existed and is used only without uuid=;
// giving both is refused. Without either, the daemon's GPU 0 is meant.
// Either way the memory must be on that GPU (EXDEV otherwise).
//
// vmm takes a descriptor the engine passed over the GPU socket
// (socket.go) and got a token for; the token is good for one
// register, by the same user, whether the register succeeds or not.

// regionOpts says which options a register form takes.
type regionOpts uint8

const (
	optGPU   regionOpts = 1 << iota // uuid=, device=
	optAlloc                        // alloc=
)

// register opens a region in the session and gives it the next number.
func (g *Session) register(ctx context.Context, t *line.Tokens, out []byte) ([]byte, error) {
	if len(g.regions) >= MaxRegions {
		return out, line.Err(ErrTooManyRegions, "this session holds %d regions, the most it may: unregister one", MaxRegions)
	}
	dev := g.e.dev
	var spec gpu.RegionSpec
	var what string
	var err error
	switch kind := t.Next(); string(kind) {
	case "sim":
		if !g.simDevice() {
			return out, line.Err(gpu.ErrNoDevice, "this mount's device is %s: register cuda <handle> <size> or register vmm <token> <size>", dev.Name())
		}
		path := t.Next()
		if path == nil {
			return out, line.Err(line.ErrInvalid, "missing the path of the shared-memory file")
		}
		what = "sim " + string(path)
		if spec, err = regionOptions(t, 0); err != nil {
			return out, err
		}
		f, err := openSimFile(ctx, string(path), spec)
		if err != nil {
			return out, err
		}
		defer f.Close()
		spec.FD = f // the file checked, mapped itself: not what the path names now
	case "cuda":
		if g.simDevice() {
			return out, line.Err(gpu.ErrNoDevice, "this mount's device is sim (no CUDA driver): register sim <path> <size>")
		}
		handle := t.Next()
		if handle == nil {
			return out, line.Err(line.ErrInvalid, "missing the CUDA IPC handle (128 hex digits)")
		}
		if spec, err = regionOptions(t, optGPU); err != nil {
			return out, err
		}
		spec.Handle = handle
		what = "cuda " + gpuNamed(spec)
	case "vmm":
		tok := t.Next()
		token, err := strconv.ParseUint(string(tok), 10, 64)
		if tok == nil || err != nil {
			return out, line.Err(line.ErrInvalid, "token %q: want the number the GPU socket answered (ok token=N)", line.Clip(tok))
		}
		if spec, err = regionOptions(t, optGPU|optAlloc); err != nil {
			return out, err
		}
		sock := g.e.socket
		if sock == nil {
			return out, line.Err(ErrNoSocket, "this mount has no GPU socket (.ucm/gpu.sock) to pass a VMM descriptor over")
		}
		h, err := sock.take(callerUID(ctx), token)
		if err != nil {
			return out, err
		}
		defer h.f.Close() // the driver keeps its own reference once imported
		if g.simDevice() {
			if err := checkSimFD(h.f, callerUID(ctx)); err != nil {
				return out, err
			}
		}
		spec.FD = h.f
		if spec.AllocSize == 0 {
			spec.AllocSize = h.alloc
		}
		what = "vmm token " + strconv.FormatUint(token, 10) + " " + gpuNamed(spec)
	default:
		return out, line.Err(line.ErrInvalid, "register %q: want register sim <path> <size>, register cuda <handle> <size> or register vmm <token> <size>", line.Clip(kind))
	}
	uid := uint32(callerUID(ctx))
	if held, ok := g.e.quota.take(uid); !ok {
		return out, line.Err(ErrTooManyRegions, "uid %d holds %d regions in its sessions, the most it may: unregister one", uid, held)
	}
	r, err := g.sess.OpenRegion(spec)
	if err != nil {
		g.e.quota.give(uid)
		return out, fmt.Errorf("register %s: %w", what, err)
	}
	g.last++
	g.regions[g.last] = &gpuRegion{r: r, what: what, uid: uid}
	g.e.store.Counters.GPURegions.Add(1)
	out = append(out, "ok region="...)
	out = strconv.AppendUint(out, g.last, 10)
	return append(out, '\n'), nil
}

// gpuNamed says which GPU a spec names, for logs.
func gpuNamed(spec gpu.RegionSpec) string {
	if spec.DeviceUUID != "" {
		return spec.DeviceUUID
	}
	return "device " + strconv.Itoa(spec.DeviceIndex)
}

// callerUID is the uid the request is checked as, its session's opener's
// (line.Creds; the daemon's own for a request from inside it).
func callerUID(ctx context.Context) int {
	if c, ok := line.CredsOf(ctx); ok {
		return int(c.Uid)
	}
	return os.Getuid()
}

// regionOptions reads "<size> [offset=N]" and the options opts allows.
func regionOptions(t *line.Tokens, opts regionOpts) (gpu.RegionSpec, error) {
	var spec gpu.RegionSpec
	tok := t.Next()
	if tok == nil {
		return spec, line.Err(line.ErrInvalid, "missing the region size")
	}
	size, ok := line.Count(tok)
	if !ok {
		return spec, line.Err(line.ErrInvalid, "size %q: not a decimal byte count", line.Clip(tok))
	}
	spec.Size = size
	device := false
	for tok := t.Next(); tok != nil; tok = t.Next() {
		name, val, _ := line.Cut(tok, '=')
		n, isCount := line.Count(val)
		switch {
		case string(name) == "offset" && isCount:
			spec.Offset = n
		case string(name) == "alloc" && isCount && opts&optAlloc != 0:
			spec.AllocSize = n
		case string(name) == "uuid" && len(val) > 0 && len(val) <= 64 && opts&optGPU != 0:
			spec.DeviceUUID = string(val)
		case string(name) == "device" && isCount && n <= 1<<20 && opts&optGPU != 0:
			spec.DeviceIndex, device = int(n), true
		default:
			return spec, line.Err(line.ErrInvalid, "option %q: want %s", line.Clip(tok), optionNames(opts))
		}
	}
	if device && spec.DeviceUUID != "" {
		return spec, line.Err(line.ErrInvalid, "uuid= and device= both given: name the GPU by uuid= alone")
	}
	return spec, nil
}

// optionNames lists the options opts allows, for messages.
func optionNames(opts regionOpts) string {
	s := "offset=N"
	if opts&optAlloc != 0 {
		s += ", alloc=N"
	}
	if opts&optGPU != 0 {
		s += ", uuid=GPU-... or device=N"
	}
	return s
}
