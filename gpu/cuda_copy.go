package gpu

import (
	"fmt"
	"runtime"
	"unsafe"
)

// CopyIn implements Region.
func (r *cudaRegion) CopyIn(off int64, src []byte) error {
	return r.CopyInBatch([]CopyOp{{Off: off, Host: src}})
}

// CopyOut implements Region.
func (r *cudaRegion) CopyOut(off int64, dst []byte) error {
	return r.CopyOutBatch([]CopyOp{{Off: off, Host: dst}})
}

// CopyInBatch implements Region (see devCtx.submit).
func (r *cudaRegion) CopyInBatch(ops []CopyOp) error { return r.batch(ops, true) }

// CopyOutBatch implements Region.
func (r *cudaRegion) CopyOutBatch(ops []CopyOp) error { return r.batch(ops, false) }

func (r *cudaRegion) batch(ops []CopyOp, in bool) error {
	if err := checkOps(r.size, ops); err != nil {
		return err
	}
	rops := make([]RegionOp, len(ops))
	for i, op := range ops {
		rops[i] = RegionOp{Region: r, Off: op.Off, Host: op.Host}
	}
	return r.c.copy(rops, in)
}

// devOp is one copy as the driver takes it, after coalescing.
type devOp struct {
	dev  uint64
	host uintptr
	n    uintptr
}

// copy runs ops (all on regions of this GPU, bounds checked) on the
// thread: every region must be usable, or nothing is submitted; then
// ops that continue each other on both sides are merged, the rest spread
// over the streams, submitted (see submit) and waited for once per
// stream. A sticky error resets the context (recoverFrom).
func (c *devCtx) copy(ops []RegionOp, in bool) error {
	err := c.th.do(func() error {
		if c.lost != nil {
			return c.lost
		}
		dops := make([]devOp, 0, len(ops))
		for _, op := range ops {
			r := op.Region.(*cudaRegion)
			if err := r.usable(); err != nil {
				return err
			}
			if len(op.Host) == 0 {
				continue
			}
			dops = appendCoalesced(dops, devOp{dev: r.dptr + uint64(op.Off), host: uintptr(unsafe.Pointer(&op.Host[0])), n: uintptr(len(op.Host))})
		}
		err := c.submit(dops, in)
		if isSticky(err) {
			return c.recoverFrom(err)
		}
		return err
	})
	runtime.KeepAlive(ops)
	return err
}

// appendCoalesced appends op, merging it into the last op when it
// continues it on the device and on the host.
func appendCoalesced(ops []devOp, op devOp) []devOp {
	if n := len(ops); n > 0 {
		last := &ops[n-1]
		if last.dev+uint64(last.n) == op.dev && last.host+last.n == op.host {
			last.n += op.n
			return ops
		}
	}
	return append(ops, op)
}

// submit queues ops over the streams: op i goes to stream i mod streams
// (contiguous shares, so each stream's copies stay in order), with one
// cuMemcpyBatchAsync per stream where the driver has it, else one
// cuMemcpy{HtoD,DtoH}Async_v2 per op. A failed submission stops the
// queueing, but every stream is still synchronized before returning, so
// no copy touches the host buffers afterwards. Thread only.
func (c *devCtx) submit(ops []devOp, in bool) error {
	if len(ops) == 0 {
		return nil
	}
	ns := min(len(c.streams), len(ops))
	var err error
	for s := 0; s < ns && err == nil; s++ {
		lo, hi := s*len(ops)/ns, (s+1)*len(ops)/ns
		err = c.queue(ops[lo:hi], in, c.streams[s])
	}
	l := c.d.lib
	for _, s := range c.streams[:ns] {
		if serr := l.check("cuStreamSynchronize", l.cuStreamSynchronize(s)); serr != nil && err == nil {
			err = serr
		}
	}
	return err
}

// queue submits ops on one stream.
func (c *devCtx) queue(ops []devOp, in bool, stream uintptr) error {
	l := c.d.lib
	if c.d.batch != nil && len(ops) > 1 {
		return c.queueBatch(ops, in, stream)
	}
	for _, op := range ops {
		var err error
		if in {
			err = l.check("cuMemcpyHtoDAsync_v2", l.cuMemcpyHtoDAsync(op.dev, op.host, op.n, stream))
		} else {
			err = l.check("cuMemcpyDtoHAsync_v2", l.cuMemcpyDtoHAsync(op.host, op.dev, op.n, stream))
		}
		if err != nil {
			return fmt.Errorf("gpu: copy of %d bytes: %w", op.n, err)
		}
	}
	return nil
}

// queueBatch submits ops with one cuMemcpyBatchAsync call. The arrays are
// read during the call only.
func (c *devCtx) queueBatch(ops []devOp, in bool, stream uintptr) error {
	dsts := make([]uint64, len(ops))
	srcs := make([]uint64, len(ops))
	sizes := make([]uintptr, len(ops))
	for i, op := range ops {
		if in {
			dsts[i], srcs[i] = op.dev, uint64(op.host)
		} else {
			dsts[i], srcs[i] = uint64(op.host), op.dev
		}
		sizes[i] = op.n
	}
	attrs := memcpyAttrs{SrcAccessOrder: cuMemcpySrcAccessOrderStream}
	var idx, fail uintptr
	res := c.d.batch(unsafe.Pointer(&dsts[0]), unsafe.Pointer(&srcs[0]), unsafe.Pointer(&sizes[0]), uintptr(len(ops)),
		&attrs, &idx, 1, &fail, stream)
	runtime.KeepAlive(dsts)
	runtime.KeepAlive(srcs)
	runtime.KeepAlive(sizes)
	if err := c.d.lib.check("cuMemcpyBatchAsync", res); err != nil {
		return fmt.Errorf("gpu: batch of %d copies (op %d failed): %w", len(ops), fail, err)
	}
	return nil
}
