package gpu

import (
	"fmt"
	"os"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// simDevice is the simulated device: a region is a shared-memory file the
// engine created and sized, mapped MAP_SHARED, so the engine's process sees
// every copy at the same offsets, as it would see DMA into its GPU memory.
//
// Lock order: simDevice.mu, then hostSet.mu; simRegion.mu is never held
// together with simDevice.mu.
type simDevice struct {
	fallback string // why auto chose this device; "" when asked for
	hosts    hostSet
	mu       sync.Mutex
	closed   bool
	regions  map[*simRegion]struct{}
}

// The simulated device and its regions implement the interfaces.
var (
	_ Device = (*simDevice)(nil)
	_ Region = (*simRegion)(nil)
)

func newSim(fallback string) *simDevice {
	return &simDevice{fallback: fallback, regions: make(map[*simRegion]struct{})}
}

// Name implements Device.
func (d *simDevice) Name() string { return "sim" }

// Stats implements Device.
func (d *simDevice) Stats() Stats {
	st := Stats{Device: "sim", Fallback: d.fallback}
	st.HostRanges, st.HostBytes, st.HostPending = d.hosts.counts()
	return st
}

// RegisterHost implements Device: bookkeeping only.
func (d *simDevice) RegisterHost(b []byte, access HostAccess) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return fmt.Errorf("gpu: register host memory: %w", ErrClosed)
	}
	return d.hosts.add(b, access, func(r *hostRange) error { r.pinned = true; return nil })
}

// UnregisterHost implements Device.
func (d *simDevice) UnregisterHost(b []byte) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return fmt.Errorf("gpu: unregister host memory: %w", ErrClosed)
	}
	return d.hosts.remove(b, nil)
}

// isClosed reports whether Close has run.
func (d *simDevice) isClosed() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.closed
}

// OpenRegion implements Device: it maps spec.Size bytes at spec.Offset of
// the file at spec.Path, or of the file spec.FD is open on. A descriptor
// is mapped itself, never reopened by a path (/proc/self/fd/N would let
// the daemon open read-write what the sender could only name, such as an
// O_PATH descriptor): mmap takes only a descriptor opened read-write.
func (d *simDevice) OpenRegion(spec RegionSpec) (Region, error) {
	if d.isClosed() {
		return nil, fmt.Errorf("gpu: open region: %w", ErrClosed)
	}
	if spec.Path == "" && spec.FD == nil {
		return nil, fmt.Errorf("gpu: the sim device takes the path or an fd of a shared-memory file, not an IPC handle: %w", ErrBadHandle)
	}
	if spec.Offset < 0 || spec.Size < 0 {
		return nil, checkSpan(spec, 0)
	}
	var mapping, mem []byte
	var err error
	if spec.FD != nil {
		spec.Path = "descriptor " + strconv.Itoa(int(spec.FD.Fd()))
		mapping, mem, err = mapShared(spec.FD, spec)
	} else {
		mapping, mem, err = mapPath(spec)
	}
	if err != nil {
		return nil, err
	}
	r := &simRegion{dev: d, path: spec.Path, size: spec.Size, mapping: mapping, mem: mem}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		_ = r.unmap()
		return nil, fmt.Errorf("gpu: open region %s: %w", spec.Path, ErrClosed)
	}
	d.regions[r] = struct{}{}
	return r, nil
}

// mapPath opens spec.Path read-write and maps the region of it (mapShared).
func mapPath(spec RegionSpec) (mapping, mem []byte, err error) {
	f, err := os.OpenFile(spec.Path, os.O_RDWR, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("gpu: open region: %w: %w", ErrBadHandle, err)
	}
	defer f.Close()
	return mapShared(f, spec)
}

// mapShared maps bytes [Offset, Offset+Size) of f read-write, MAP_SHARED.
// The mapping starts at the page that holds Offset; mem is the region's
// window into it (both nil for an empty region). f must be a regular file
// open read-write that holds the whole region: a mapping past its end
// would fault on first touch.
func mapShared(f *os.File, spec RegionSpec) (mapping, mem []byte, err error) {
	flags, err := unix.FcntlInt(f.Fd(), unix.F_GETFL, 0)
	if err != nil || flags&unix.O_PATH != 0 || flags&unix.O_ACCMODE != unix.O_RDWR {
		return nil, nil, fmt.Errorf("gpu: open region %s: not open read-write: %w", spec.Path, ErrBadHandle)
	}
	st, err := f.Stat()
	if err != nil {
		return nil, nil, fmt.Errorf("gpu: open region: %w: %w", ErrBadHandle, err)
	}
	if !st.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("gpu: open region %s: not a regular file (%s): %w", spec.Path, st.Mode().Type(), ErrBadHandle)
	}
	if err := checkSpan(spec, st.Size()); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", spec.Path, err)
	}
	if spec.Size == 0 {
		return nil, nil, nil
	}
	start := spec.Offset &^ int64(os.Getpagesize()-1)
	mapping, err = unix.Mmap(int(f.Fd()), start, int(spec.Offset+spec.Size-start), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, nil, fmt.Errorf("gpu: map region %s (%d bytes at %d): %w", spec.Path, spec.Size, spec.Offset, err)
	}
	return mapping, mapping[spec.Offset-start:], nil
}

// Close implements Device.
func (d *simDevice) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	regions := d.regions
	d.regions = nil
	d.hosts.drain()
	d.mu.Unlock()
	var first error
	for r := range regions {
		if err := r.closeMapping(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// forget drops a closed region from the device's set.
func (d *simDevice) forget(r *simRegion) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.regions, r)
}
