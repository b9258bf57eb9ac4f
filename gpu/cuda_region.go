package gpu

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"
)

// cudaRegion is engine GPU memory opened from a CUDA IPC handle, with a
// stream of its own for its copies. dev, ord, size and dptr do not change
// after open; closed and the driver handles are touched only on the
// device's thread, where every copy and Close runs.
type cudaRegion struct {
	dev    *cudaDevice
	ord    int
	mapped uint64 // device address cuIpcOpenMemHandle returned
	dptr   uint64 // device address of the region's first byte (mapped+Offset)
	size   int64
	stream uintptr
	closed bool
}

// OpenRegion implements Device: cuIpcOpenMemHandle_v2 (with
// CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) in device spec.DeviceIndex's primary
// context, then a check (cuMemGetAddressRange_v2) that the allocation
// behind the handle holds spec.Offset+spec.Size bytes, then a non-blocking
// stream for the region's copies.
func (d *cudaDevice) OpenRegion(spec RegionSpec) (Region, error) {
	if len(spec.Handle) == 0 {
		return nil, fmt.Errorf("gpu: the CUDA device takes an IPC handle, not a path: %w", ErrBadHandle)
	}
	h, err := parseHandle(spec.Handle)
	if err != nil {
		return nil, err
	}
	if spec.Offset < 0 || spec.Size < 0 {
		return nil, checkSpan(spec, 0)
	}
	r := &cudaRegion{dev: d, ord: spec.DeviceIndex, size: spec.Size}
	err = d.th.do(func() error {
		if err := d.use(r.ord); err != nil {
			return err
		}
		return r.open(h, spec)
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// open maps the handle, checks the region fits in the allocation behind
// it, and creates the stream. Thread only.
func (r *cudaRegion) open(h ipcHandle, spec RegionSpec) error {
	l := r.dev.lib
	if err := l.check("cuIpcOpenMemHandle_v2", l.cuIpcOpenMemHandle(&r.mapped, h, cuIpcMemLazyEnablePeerAccess)); err != nil {
		return fmt.Errorf("gpu: open IPC handle: %w: %w", ErrBadHandle, err)
	}
	var base uint64
	var alloc uintptr
	err := l.check("cuMemGetAddressRange_v2", l.cuMemGetAddressRange(&base, &alloc, r.mapped))
	if err == nil {
		err = checkSpan(spec, int64(uint64(alloc)-(r.mapped-base)))
	}
	if err == nil {
		err = l.check("cuStreamCreate", l.cuStreamCreate(&r.stream, cuStreamNonBlocking))
	}
	if err != nil {
		_ = l.cuIpcCloseMemHandle(r.mapped)
		return err
	}
	r.dptr = r.mapped + uint64(spec.Offset)
	r.dev.regions[r] = struct{}{}
	return nil
}

// Size implements Region.
func (r *cudaRegion) Size() int64 { return r.size }

// CopyIn implements Region.
func (r *cudaRegion) CopyIn(off int64, src []byte) error {
	return r.CopyInBatch([]CopyOp{{Off: off, Host: src}})
}

// CopyOut implements Region.
func (r *cudaRegion) CopyOut(off int64, dst []byte) error {
	return r.CopyOutBatch([]CopyOp{{Off: off, Host: dst}})
}

// CopyInBatch implements Region: every op is queued on the region's stream
// with cuMemcpyHtoDAsync_v2, then the stream is synchronized once.
func (r *cudaRegion) CopyInBatch(ops []CopyOp) error {
	return r.batch(ops, true)
}

// CopyOutBatch implements Region, with cuMemcpyDtoHAsync_v2.
func (r *cudaRegion) CopyOutBatch(ops []CopyOp) error {
	return r.batch(ops, false)
}

// batch checks every op, then submits and waits on the thread. A failed
// submission stops the queueing, but the stream is still synchronized
// before returning, so no copy touches the host buffers afterwards.
func (r *cudaRegion) batch(ops []CopyOp, in bool) error {
	if err := checkOps(r.size, ops); err != nil {
		return err
	}
	l := r.dev.lib
	err := r.dev.th.do(func() error {
		if r.closed {
			return fmt.Errorf("gpu: region: %w", ErrClosed)
		}
		if err := r.dev.use(r.ord); err != nil {
			return err
		}
		var err error
		for _, op := range ops {
			n := len(op.Host)
			if n == 0 {
				continue
			}
			host := uintptr(unsafe.Pointer(&op.Host[0]))
			dev := r.dptr + uint64(op.Off)
			if in {
				err = l.check("cuMemcpyHtoDAsync_v2", l.cuMemcpyHtoDAsync(dev, host, uintptr(n), r.stream))
			} else {
				err = l.check("cuMemcpyDtoHAsync_v2", l.cuMemcpyDtoHAsync(host, dev, uintptr(n), r.stream))
			}
			if err != nil {
				err = fmt.Errorf("gpu: copy of %d bytes at offset %d: %w", n, op.Off, err)
				break
			}
		}
		if serr := l.check("cuStreamSynchronize", l.cuStreamSynchronize(r.stream)); serr != nil && err == nil {
			err = serr
		}
		return err
	})
	runtime.KeepAlive(ops)
	return err
}

// Close implements Region.
// Closing a region of a closed device is a no-op: the device closed it.
func (r *cudaRegion) Close() error {
	err := r.dev.th.do(func() error {
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

// release destroys the stream and closes the IPC mapping. Thread only.
func (r *cudaRegion) release() error {
	r.closed = true
	delete(r.dev.regions, r)
	l := r.dev.lib
	err := r.dev.use(r.ord)
	if err == nil {
		err = l.check("cuStreamDestroy_v2", l.cuStreamDestroy(r.stream))
	}
	if cerr := l.check("cuIpcCloseMemHandle", l.cuIpcCloseMemHandle(r.mapped)); cerr != nil && err == nil {
		err = cerr
	}
	return err
}
