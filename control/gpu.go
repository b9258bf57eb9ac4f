package control

import (
	"context"
	"os"

	"github.com/ucmfs/ucmfs/transfer"
)

// .ucm/gpu is a session of the GPU transfer engine (package transfer):
// register engine memory, load blocks into it, dump blocks from it
// (docs/control.md has the grammar). The file exists only on a mount with
// a device.
func openGPU(e *Env) handler { return gpuHandler{e.GPU.NewSession()} }

// gpuHandler is the handler of a .ucm/gpu session.
type gpuHandler struct{ s *transfer.Session }

func (h gpuHandler) answer(ctx context.Context, req, out []byte) ([]byte, error) {
	return h.s.Answer(ctx, req, out)
}

func (h gpuHandler) close() { h.s.Close() }

// OpenGPUSocket opens the GPU socket of the mount at path (nothing
// without a device or a path), with the control files' mode and group
// (a), so register vmm can take descriptors passed over it.
func (e *Env) OpenGPUSocket(path string, a Access) error {
	if e.GPU == nil {
		return nil
	}
	gid := -1
	if a.Group {
		gid = int(a.Gid)
	}
	return e.GPU.OpenSocket(path, os.FileMode(a.Perm), gid)
}

// GPUSocket is the mount's GPU socket, nil when it has none.
func (e *Env) GPUSocket() *transfer.Socket {
	if e.GPU == nil {
		return nil
	}
	return e.GPU.Socket()
}

// CloseGPUSocket closes the GPU socket, if any: the descriptors waiting
// under tokens are closed and the socket file removed.
func (e *Env) CloseGPUSocket() {
	if e.GPU != nil {
		e.GPU.CloseSocket()
	}
}
