package gpu

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// cudaDevice is the CUDA driver. It runs on several locked OS threads (see
// thread): one host thread for the registration of host memory, and one
// thread per GPU in use, started with the first region on it, which owns
// that GPU's primary context, streams and regions. So GPUs copy in
// parallel, and registration on the memory tier's write path never queues
// behind a copy.
//
// The host thread needs a current context for cuMemHostRegister; it
// borrows the primary context of the first GPU that comes into use (the
// home context). Until one does, registrations are only recorded, and done
// when the home context appears: no context is created on a GPU nobody
// uses.
type cudaDevice struct {
	lib   *cudaLib
	host  *thread
	batch batchFn // cuMemcpyBatchAsync, or nil; set by init

	// Set by init, read-only after.
	name       string
	driver     int          // cuDriverGetVersion
	infos      []DeviceInfo // by ordinal
	roRegister bool         // every GPU supports CU_MEMHOSTREGISTER_READ_ONLY
	streams    int          // streams per GPU

	mu     sync.Mutex
	ctxs   map[int]*devCtx // GPUs in use, by ordinal
	home   *devCtx         // the context current on the host thread
	closed bool

	adopted   bool    // the home context is current on the host thread; host thread only
	hosts     hostSet // driver side touched on the host thread only
	resets    atomic.Int64
	lastReset atomic.Pointer[string]
}

// The CUDA device and its regions implement the interfaces.
var (
	_ Device = (*cudaDevice)(nil)
	_ Region = (*cudaRegion)(nil)
)

// openCUDA loads the driver, starts the host thread and initializes the
// driver there, reading every GPU's identity and attributes (which needs
// no context). Any failure wraps ErrNoDevice.
func openCUDA(lib string, streams int) (*cudaDevice, error) {
	l, err := loadCUDA(lib)
	if err != nil {
		return nil, err
	}
	if streams < 1 {
		streams = DefaultStreams
	}
	d := &cudaDevice{lib: l, ctxs: make(map[int]*devCtx), streams: streams}
	th, err := startThread(d.init)
	if err != nil {
		return nil, err
	}
	d.host = th
	return d, nil
}

// init runs on the host thread first.
func (d *cudaDevice) init() error {
	l := d.lib
	if err := l.check("cuInit", l.cuInit(0)); err != nil {
		return fmt.Errorf("gpu: %w: %w", ErrNoDevice, err)
	}
	p, err := probeDriver(l)
	if err != nil {
		return fmt.Errorf("gpu: %w: %w", ErrNoDevice, err)
	}
	if len(p.Devices) < 1 {
		return fmt.Errorf("gpu: the CUDA driver sees no device: %w", ErrNoDevice)
	}
	d.driver, d.infos = p.DriverVersion, p.Devices
	d.roRegister = true
	for _, in := range p.Devices {
		d.roRegister = d.roRegister && in.ReadOnlyHostRegister
	}
	d.batch = l.batchFunc()
	d.name = "cuda:0 " + p.Devices[0].Name
	if n := len(p.Devices); n > 1 {
		d.name += fmt.Sprintf(" (%d devices)", n)
	}
	return nil
}

// Name implements Device.
func (d *cudaDevice) Name() string { return d.name }

// Devices lists the GPUs the driver sees, in this process's numbering.
func (d *cudaDevice) Devices() []DeviceInfo { return append([]DeviceInfo(nil), d.infos...) }

// ordinal resolves the GPU a spec names: by UUID when it has one (the
// engine's numbering may differ from this process's), else by index.
func (d *cudaDevice) ordinal(spec RegionSpec) (int, error) {
	if spec.DeviceUUID != "" {
		u, err := ParseUUID(spec.DeviceUUID)
		if err != nil {
			return 0, err
		}
		for _, in := range d.infos {
			if in.UUID == u {
				return in.Ordinal, nil
			}
		}
		return 0, fmt.Errorf("gpu: no GPU with UUID %s among the %d this daemon sees (hidden by its CUDA_VISIBLE_DEVICES?): %w",
			u, len(d.infos), ErrNoDevice)
	}
	if spec.DeviceIndex < 0 || spec.DeviceIndex >= len(d.infos) {
		return 0, fmt.Errorf("gpu: device index %d (the driver sees %d): %w", spec.DeviceIndex, len(d.infos), ErrNoDevice)
	}
	return spec.DeviceIndex, nil
}

// describe names GPU ord for messages: "cuda:1 (GPU-...)".
func (d *cudaDevice) describe(ord int) string {
	if ord < 0 || ord >= len(d.infos) {
		return fmt.Sprintf("cuda:%d (not visible to this daemon)", ord)
	}
	return fmt.Sprintf("cuda:%d (%s)", ord, d.infos[ord].UUID)
}

// ctxFor returns GPU ord's context, starting its thread (and retaining
// its primary context) the first time; the first GPU in use becomes the
// home context of host registration.
func (d *cudaDevice) ctxFor(ord int) (*devCtx, error) {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil, fmt.Errorf("gpu: device: %w", ErrClosed)
	}
	if c := d.ctxs[ord]; c != nil {
		d.mu.Unlock()
		return c, nil
	}
	c, err := startCtx(d, ord)
	if err != nil {
		d.mu.Unlock()
		return nil, err
	}
	d.ctxs[ord] = c
	home := d.home == nil
	if home {
		d.home = c
	}
	d.mu.Unlock()
	// Outside mu: the host thread may be waiting for it (RegisterHost).
	if home {
		d.host.post(func() { d.adopt(c) })
	}
	return c, nil
}

// isHome reports whether c is the home context.
func (d *cudaDevice) isHome(c *devCtx) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.home == c
}

// Stats implements Device.
func (d *cudaDevice) Stats() Stats {
	st := Stats{Device: d.name, DriverVersion: d.driver, Streams: d.streams,
		ReadOnlyRegister: d.roRegister, BatchAPI: d.batch != nil, Resets: d.resets.Load()}
	if p := d.lastReset.Load(); p != nil {
		st.LastReset = *p
	}
	d.mu.Lock()
	for ord := range d.ctxs {
		st.Contexts = append(st.Contexts, ord)
	}
	d.mu.Unlock()
	sortInts(st.Contexts)
	st.HostRanges, st.HostBytes, st.HostPending = d.hosts.counts()
	return st
}

// Close implements Device: every GPU's thread closes its regions and
// streams, after the requests in flight; then the host thread unregisters
// host memory and releases the primary contexts, and ends.
func (d *cudaDevice) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	ctxs := d.ctxs
	d.mu.Unlock()
	var first error
	keep := func(err error) {
		if err != nil && first == nil {
			first = err
		}
	}
	for _, c := range ctxs {
		keep(c.stop())
	}
	keep(d.host.stop(func() error {
		var first error
		for _, h := range d.hosts.drain() {
			if err := d.unregister(h); err != nil && first == nil {
				first = err
			}
		}
		l := d.lib
		_ = l.cuCtxSetCurrent(0)
		for _, c := range ctxs {
			if err := l.check("cuDevicePrimaryCtxRelease_v2", l.cuDevicePrimaryCtxRelease(c.dev)); err != nil && first == nil {
				first = err
			}
		}
		return first
	}))
	return first
}
