package gpu

import (
	"runtime"
)

// RegisterHost implements Device: cuMemHostRegister_v2 with
// CU_MEMHOSTREGISTER_PORTABLE, so every context may DMA from the range,
// and CU_MEMHOSTREGISTER_READ_ONLY for HostReadOnly where every GPU
// reports CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED (plain
// registration elsewhere). It runs on the host thread, never behind a
// copy. Before any GPU is in use the range is recorded and registered
// when the first one is.
func (d *cudaDevice) RegisterHost(b []byte, access HostAccess) error {
	return d.host.do(func() error {
		pending := !d.adopted
		return d.hosts.add(b, access, func(r *hostRange) error {
			if pending {
				return nil
			}
			return d.register(r)
		})
	})
}

// register pins one range in the home context. Host thread only.
func (d *cudaDevice) register(r *hostRange) error {
	flags := uint32(cuMemHostRegisterPortable)
	if r.access == HostReadOnly && d.roRegister {
		flags |= cuMemHostRegisterReadOnly
	}
	res := d.lib.cuMemHostRegister(r.start, r.end-r.start, flags)
	runtime.KeepAlive(r.b)
	if err := d.lib.check("cuMemHostRegister_v2", res); err != nil {
		return err
	}
	r.pinned = true
	return nil
}

// UnregisterHost implements Device. The range is forgotten even when the
// driver call fails (the caller unmaps it next, and a sticky context
// fails every call): the error is returned all the same.
func (d *cudaDevice) UnregisterHost(b []byte) error {
	return d.host.do(func() error {
		return d.hosts.remove(b, d.unregister)
	})
}

// unregister is cuMemHostUnregister of one range, if it was pinned. Host
// thread only.
func (d *cudaDevice) unregister(r hostRange) error {
	if !r.pinned {
		return nil
	}
	res := d.lib.cuMemHostUnregister(r.start)
	runtime.KeepAlive(r.b)
	return d.lib.check("cuMemHostUnregister", res)
}

// adopt makes c the host thread's context and registers every range
// recorded so far. Host thread only.
func (d *cudaDevice) adopt(c *devCtx) {
	if d.lib.cuCtxSetCurrent(c.ctx.Load()) != cudaSuccess {
		return
	}
	d.adopted = true
	d.hosts.each(func(r *hostRange) {
		if !r.pinned {
			_ = d.register(r)
		}
	})
}

// reregister runs after the home context was reset, which destroyed the
// registrations made in it: it makes the fresh context current and
// registers every range again. Host thread only.
func (d *cudaDevice) reregister() {
	d.mu.Lock()
	c := d.home
	d.mu.Unlock()
	if d.lib.cuCtxSetCurrent(c.ctx.Load()) != cudaSuccess {
		return
	}
	d.hosts.each(func(r *hostRange) {
		_ = d.lib.cuMemHostUnregister(r.start) // gone with the reset, normally
		r.pinned = false
		_ = d.register(r)
	})
}
