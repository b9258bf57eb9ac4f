package gpu

import (
	"encoding/hex"
	"fmt"
	"runtime"
)

// cudaDevice is the CUDA driver. Everything it does runs on its thread
// (see thread): the driver calls, and also the bookkeeping of contexts,
// regions and registered host memory, so that state needs no lock of its
// own and Close, which runs last on the thread, sees all of it.
type cudaDevice struct {
	lib   *cudaLib
	th    *thread
	name  string // set by init, read-only after
	count int    // devices the driver sees; set by init

	// Owned by the thread.
	ctxs    map[int]primaryCtx // retained primary contexts by ordinal
	current uintptr            // the context current on the thread
	hosts   hostSet
	regions map[*cudaRegion]struct{}
}

// The CUDA device and its regions implement the interfaces.
var (
	_ Device = (*cudaDevice)(nil)
	_ Region = (*cudaRegion)(nil)
)

// primaryCtx is a retained primary context and the device it belongs to.
type primaryCtx struct {
	dev int32
	ctx uintptr
}

// openCUDA loads the driver, starts the device's thread, initializes the
// driver there and makes device 0's primary context current. Any failure
// wraps ErrNoDevice.
func openCUDA(lib string) (*cudaDevice, error) {
	l, err := loadCUDA(lib)
	if err != nil {
		return nil, err
	}
	d := &cudaDevice{lib: l, ctxs: make(map[int]primaryCtx), regions: make(map[*cudaRegion]struct{})}
	th, err := startThread(d.init)
	if err != nil {
		return nil, err
	}
	d.th = th
	return d, nil
}

// init runs on the thread first.
func (d *cudaDevice) init() error {
	l := d.lib
	if err := l.check("cuInit", l.cuInit(0)); err != nil {
		return fmt.Errorf("gpu: %w: %w", ErrNoDevice, err)
	}
	var n int32
	if err := l.check("cuDeviceGetCount", l.cuDeviceGetCount(&n)); err != nil {
		return fmt.Errorf("gpu: %w: %w", ErrNoDevice, err)
	}
	if n < 1 {
		return fmt.Errorf("gpu: the CUDA driver sees no device: %w", ErrNoDevice)
	}
	d.count = int(n)
	if err := d.use(0); err != nil {
		return fmt.Errorf("gpu: %w: %w", ErrNoDevice, err)
	}
	var buf [256]byte
	name := "unknown"
	if l.cuDeviceGetName(&buf[0], int32(len(buf)), d.ctxs[0].dev) == cudaSuccess {
		name = cString(&buf[0], len(buf))
	}
	d.name = "cuda:0 " + name
	if n > 1 {
		d.name += fmt.Sprintf(" (%d devices)", n)
	}
	return nil
}

// use makes device ord's primary context current on the thread, retaining
// it the first time. Thread only.
func (d *cudaDevice) use(ord int) error {
	l := d.lib
	pc, ok := d.ctxs[ord]
	if !ok {
		if ord < 0 || ord >= d.count {
			return fmt.Errorf("gpu: device index %d (the driver sees %d): %w", ord, d.count, ErrNoDevice)
		}
		if err := l.check("cuDeviceGet", l.cuDeviceGet(&pc.dev, int32(ord))); err != nil {
			return err
		}
		if err := l.check("cuDevicePrimaryCtxRetain", l.cuDevicePrimaryCtxRetain(&pc.ctx, pc.dev)); err != nil {
			return err
		}
		d.ctxs[ord] = pc
	}
	if pc.ctx != d.current {
		if err := l.check("cuCtxSetCurrent", l.cuCtxSetCurrent(pc.ctx)); err != nil {
			return err
		}
		d.current = pc.ctx
	}
	return nil
}

// Name implements Device.
func (d *cudaDevice) Name() string { return d.name }

// RegisterHost implements Device: cuMemHostRegister_v2 with
// CU_MEMHOSTREGISTER_PORTABLE, so every context may DMA from the range
// (and CU_MEMHOSTREGISTER_READ_ONLY for HostReadOnly).
func (d *cudaDevice) RegisterHost(b []byte, access HostAccess) error {
	return d.th.do(func() error {
		return d.hosts.add(b, access, func(r hostRange) error {
			flags := uint32(cuMemHostRegisterPortable)
			if access == HostReadOnly {
				flags |= cuMemHostRegisterReadOnly
			}
			res := d.lib.cuMemHostRegister(r.start, r.end-r.start, flags)
			runtime.KeepAlive(r.b)
			return d.lib.check("cuMemHostRegister_v2", res)
		})
	})
}

// UnregisterHost implements Device.
func (d *cudaDevice) UnregisterHost(b []byte) error {
	return d.th.do(func() error {
		return d.hosts.remove(b, d.unregister)
	})
}

// unregister is cuMemHostUnregister of one range. Thread only.
func (d *cudaDevice) unregister(r hostRange) error {
	res := d.lib.cuMemHostUnregister(r.start)
	runtime.KeepAlive(r.b)
	return d.lib.check("cuMemHostUnregister", res)
}

// parseHandle accepts a CUDA IPC handle as 64 raw bytes or 128 hex digits.
func parseHandle(b []byte) (ipcHandle, error) {
	var h ipcHandle
	switch len(b) {
	case IPCHandleSize:
		copy(h.Reserved[:], b)
	case 2 * IPCHandleSize:
		if _, err := hex.Decode(h.Reserved[:], b); err != nil {
			return h, fmt.Errorf("gpu: IPC handle: %w: %w", ErrBadHandle, err)
		}
	default:
		return h, fmt.Errorf("gpu: IPC handle of %d bytes (want %d raw or %d hex digits): %w",
			len(b), IPCHandleSize, 2*IPCHandleSize, ErrBadHandle)
	}
	return h, nil
}

// Close implements Device: on the thread, after every request in flight,
// it closes the regions, unregisters host memory and releases the primary
// contexts; then the thread ends.
func (d *cudaDevice) Close() error {
	return d.th.stop(func() error {
		var first error
		keep := func(err error) {
			if err != nil && first == nil {
				first = err
			}
		}
		for r := range d.regions {
			keep(r.release())
		}
		for _, h := range d.hosts.drain() {
			keep(d.unregister(h))
		}
		l := d.lib
		keep(l.check("cuCtxSetCurrent", l.cuCtxSetCurrent(0)))
		d.current = 0
		for _, pc := range d.ctxs {
			keep(l.check("cuDevicePrimaryCtxRelease_v2", l.cuDevicePrimaryCtxRelease(pc.dev)))
		}
		d.ctxs = nil
		return first
	})
}
