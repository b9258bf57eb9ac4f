package gpu

import (
	"encoding/hex"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"unsafe"
)

// cudaRegion is engine GPU memory opened in one GPU's context, from a
// CUDA IPC handle or from a VMM shareable handle (a POSIX fd). c, vmm,
// size and dptr do not change after open; aborted is set from any
// goroutine; closed, dead and the driver handles are touched only on the
// GPU's thread, where every copy and Close runs.
type cudaRegion struct {
	c    *devCtx
	vmm  bool
	size int64
	dptr uint64 // device address of the region's first byte

	ipc    ipcHandle // IPC: the handle (key of devCtx.ipcMaps)
	mapped uint64    // IPC: the address cuIpcOpenMemHandle returned; VMM: the reservation
	alloc  uintptr   // VMM: bytes mapped (the whole allocation)
	handle uint64    // VMM: the imported allocation handle

	aborted atomic.Bool
	closed  bool
	dead    error // why a reset closed it
}

// OpenRegion implements Device. The GPU is the one spec names (by UUID,
// else by index); the memory is opened in its primary context, from the
// IPC handle (cuIpcOpenMemHandle_v2 with CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS)
// or the VMM fd (cuMemImportFromShareableHandle, cuMemAddressReserve,
// cuMemMap, cuMemSetAccess). Then the GPU the memory really lives on
// (cuPointerGetAttribute CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL) must be the
// one named (ErrWrongDevice otherwise: the copy would cross GPUs over
// NVLink, or fail on PCIe), and the allocation must hold Offset+Size
// bytes (cuMemGetAddressRange_v2; ErrSize).
func (d *cudaDevice) OpenRegion(spec RegionSpec) (Region, error) {
	var h ipcHandle
	switch {
	case spec.FD != nil:
		if len(spec.Handle) != 0 {
			return nil, fmt.Errorf("gpu: a region takes an IPC handle or a VMM fd, not both: %w", ErrBadHandle)
		}
	case len(spec.Handle) == 0:
		return nil, fmt.Errorf("gpu: the CUDA device takes an IPC handle or a VMM fd, not a path: %w", ErrBadHandle)
	default:
		var err error
		if h, err = parseHandle(spec.Handle); err != nil {
			return nil, err
		}
	}
	if spec.Offset < 0 || spec.Size < 0 {
		return nil, checkSpan(spec, 0)
	}
	ord, err := d.ordinal(spec)
	if err != nil {
		return nil, err
	}
	c, err := d.ctxFor(ord)
	if err != nil {
		return nil, err
	}
	r := &cudaRegion{c: c, vmm: spec.FD != nil, size: spec.Size}
	err = c.th.do(func() error {
		if c.lost != nil {
			return c.lost
		}
		if r.vmm {
			err = r.openVMM(spec)
		} else {
			err = r.openIPC(h, spec)
		}
		if err == nil {
			c.regions[r] = struct{}{}
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// ipcMap is one IPC handle opened in a context, shared by the regions
// that name it: an engine registers each tensor of a segment with the
// segment's handle, and drivers differ on opening one handle twice.
type ipcMap struct {
	addr uint64
	refs int
}

// openIPC maps the handle (or shares its mapping) and checks where the
// memory is. Thread only.
func (r *cudaRegion) openIPC(h ipcHandle, spec RegionSpec) error {
	l, c := r.c.d.lib, r.c
	m := c.ipcMaps[h]
	if m == nil {
		m = &ipcMap{}
		if err := l.check("cuIpcOpenMemHandle_v2", l.cuIpcOpenMemHandle(&m.addr, h, cuIpcMemLazyEnablePeerAccess)); err != nil {
			return fmt.Errorf("gpu: open IPC handle on %s: %w: %w", c.d.describe(c.ord), ErrBadHandle, err)
		}
		c.ipcMaps[h] = m
	}
	m.refs++
	r.mapped, r.ipc = m.addr, h
	if err := r.checkPlace(r.mapped, spec); err != nil {
		r.closeIPC()
		return err
	}
	r.dptr = r.mapped + uint64(spec.Offset)
	return nil
}

// closeIPC drops the region's reference to its mapping, closing it with
// the last one. Thread only.
func (r *cudaRegion) closeIPC() error {
	c := r.c
	m := c.ipcMaps[r.ipc]
	if m == nil {
		return nil
	}
	if m.refs--; m.refs > 0 {
		return nil
	}
	delete(c.ipcMaps, r.ipc)
	return c.d.lib.check("cuIpcCloseMemHandle", c.d.lib.cuIpcCloseMemHandle(m.addr))
}

// openVMM imports the fd and maps the whole allocation read-write for
// this GPU. Thread only.
func (r *cudaRegion) openVMM(spec RegionSpec) error {
	l, d := r.c.d.lib, r.c.d
	alloc := spec.AllocSize
	if alloc == 0 {
		alloc = spec.Offset + spec.Size
	}
	if err := checkSpan(spec, alloc); err != nil || alloc == 0 {
		return fmt.Errorf("gpu: VMM region: %w", ErrSize)
	}
	r.alloc = uintptr(alloc)
	fd := spec.FD.Fd()
	res := l.cuMemImportFromShareable(&r.handle, fd, cuMemHandlePosixFD)
	runtime.KeepAlive(spec.FD)
	if err := l.check("cuMemImportFromShareableHandle", res); err != nil {
		return fmt.Errorf("gpu: import VMM fd on %s: %w: %w", d.describe(r.c.ord), ErrBadHandle, err)
	}
	var prop memAllocProp
	err := l.check("cuMemGetAllocationPropertiesFromHandle", l.cuMemGetAllocationPropsFrom(&prop, r.handle))
	if err == nil && int(prop.Loc.ID) != r.c.ord {
		err = fmt.Errorf("gpu: the engine's memory is on %s, not on %s as named: %w",
			d.describe(int(prop.Loc.ID)), d.describe(r.c.ord), ErrWrongDevice)
	}
	if err == nil {
		err = l.check("cuMemAddressReserve", l.cuMemAddressReserve(&r.mapped, r.alloc, 0, 0, 0))
		if err != nil {
			r.mapped = 0
		}
	}
	mappedOK := false
	if err == nil {
		if err = l.check("cuMemMap", l.cuMemMap(r.mapped, r.alloc, 0, r.handle, 0)); err != nil {
			err = fmt.Errorf("gpu: map VMM memory of %d bytes (is that the allocation's size?): %w: %w", alloc, ErrSize, err)
		}
		mappedOK = err == nil
	}
	if err == nil {
		desc := memAccessDesc{Loc: memLocation{Type: cuMemLocationDevice, ID: int32(r.c.ord)}, Flags: cuMemAccessReadWrite}
		err = l.check("cuMemSetAccess", l.cuMemSetAccess(r.mapped, r.alloc, &desc, 1))
	}
	if err == nil {
		err = r.checkPlace(r.mapped, spec)
	}
	if err != nil {
		r.releaseVMM(mappedOK)
		return err
	}
	r.dptr = r.mapped + uint64(spec.Offset)
	return nil
}

// checkPlace checks that the memory at p is on this region's GPU and
// holds spec's span. Thread only.
func (r *cudaRegion) checkPlace(p uint64, spec RegionSpec) error {
	l, d := r.c.d.lib, r.c.d
	var ord int32 = -1
	if err := l.check("cuPointerGetAttribute", l.cuPointerGetAttribute(unsafe.Pointer(&ord), cuPointerAttrDeviceOrdinal, p)); err != nil {
		return fmt.Errorf("gpu: which GPU holds the engine's memory: %w", err)
	}
	if int(ord) != r.c.ord {
		return fmt.Errorf("gpu: the engine's memory is on %s, not on %s as named (name the GPU by its UUID): %w",
			d.describe(int(ord)), d.describe(r.c.ord), ErrWrongDevice)
	}
	var base uint64
	var alloc uintptr
	if err := l.check("cuMemGetAddressRange_v2", l.cuMemGetAddressRange(&base, &alloc, p)); err != nil {
		return err
	}
	return checkSpan(spec, int64(uint64(alloc)-(p-base)))
}

// releaseVMM undoes what openVMM did; mapped says whether cuMemMap ran.
func (r *cudaRegion) releaseVMM(mapped bool) error {
	l := r.c.d.lib
	var first error
	keep := func(fn string, res cuResult) {
		if err := l.check(fn, res); err != nil && first == nil {
			first = err
		}
	}
	if mapped {
		keep("cuMemUnmap", l.cuMemUnmap(r.mapped, r.alloc))
	}
	if r.mapped != 0 {
		keep("cuMemAddressFree", l.cuMemAddressFree(r.mapped, r.alloc))
	}
	if r.handle != 0 {
		keep("cuMemRelease", l.cuMemRelease(r.handle))
	}
	return first
}

// Size implements Region.
func (r *cudaRegion) Size() int64 { return r.size }

// abort refuses every later copy at once, queued ones included.
func (r *cudaRegion) abort() { r.aborted.Store(true) }

// usable says why the region cannot copy, or nil. Thread only.
func (r *cudaRegion) usable() error {
	switch {
	case r.dead != nil:
		return r.dead
	case r.closed || r.aborted.Load():
		return fmt.Errorf("gpu: region: %w", ErrClosed)
	}
	return nil
}

// Close implements Region. Closing a region of a closed device, or one a
// reset closed, is a no-op.
func (r *cudaRegion) Close() error {
	r.abort()
	err := r.c.th.do(func() error {
		if r.closed {
			return nil
		}
		return r.release()
	})
	if errors.Is(err, ErrClosed) {
		return nil
	}
	return err
}

// release unmaps the memory. Thread only.
func (r *cudaRegion) release() error {
	r.closed = true
	delete(r.c.regions, r)
	if r.vmm {
		return r.releaseVMM(true)
	}
	return r.closeIPC()
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
