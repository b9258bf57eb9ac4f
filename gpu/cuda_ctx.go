package gpu

import (
	"errors"
	"fmt"
	"sync/atomic"
)

// devCtx is one GPU in use: its primary context (retained once, with
// CU_CTX_SCHED_BLOCKING_SYNC so a wait sleeps instead of spinning a core),
// the thread it is current on, a pool of non-blocking streams, and the
// regions opened in it. Everything but ctx is touched on its thread only.
type devCtx struct {
	d   *cudaDevice
	ord int
	dev int32
	ctx atomic.Uintptr // the primary context; the host thread reads it
	th  *thread

	streams []uintptr
	regions map[*cudaRegion]struct{}
	ipcMaps map[ipcHandle]*ipcMap
	lost    error // the context could not be recovered after a sticky error
}

// startCtx starts GPU ord's thread, which retains and makes current the
// primary context and creates the streams.
func startCtx(d *cudaDevice, ord int) (*devCtx, error) {
	c := &devCtx{d: d, ord: ord, regions: make(map[*cudaRegion]struct{}), ipcMaps: make(map[ipcHandle]*ipcMap)}
	th, err := startThread(c.init)
	if err != nil {
		return nil, fmt.Errorf("gpu: %s: %w", d.describe(ord), err)
	}
	c.th = th
	return c, nil
}

// init runs on the GPU's thread first.
func (c *devCtx) init() error {
	l := c.d.lib
	if err := l.check("cuDeviceGet", l.cuDeviceGet(&c.dev, int32(c.ord))); err != nil {
		return err
	}
	// Best effort: a context some other module of this process made
	// active keeps its flags, and copies still work.
	_ = l.cuDevicePrimaryCtxSetFlags(c.dev, cuCtxSchedBlockingSync)
	var ctx uintptr
	if err := l.check("cuDevicePrimaryCtxRetain", l.cuDevicePrimaryCtxRetain(&ctx, c.dev)); err != nil {
		return err
	}
	c.ctx.Store(ctx)
	err := l.check("cuCtxSetCurrent", l.cuCtxSetCurrent(ctx))
	if err == nil {
		err = c.makeStreams()
	}
	if err != nil {
		_ = l.cuCtxSetCurrent(0)
		_ = l.cuDevicePrimaryCtxRelease(c.dev)
	}
	return err
}

// makeStreams creates the stream pool. Thread only.
func (c *devCtx) makeStreams() error {
	l := c.d.lib
	for range c.d.streams {
		var s uintptr
		if err := l.check("cuStreamCreate", l.cuStreamCreate(&s, cuStreamNonBlocking)); err != nil {
			c.destroyStreams()
			return err
		}
		c.streams = append(c.streams, s)
	}
	return nil
}

// destroyStreams destroys the stream pool. Thread only.
func (c *devCtx) destroyStreams() error {
	var first error
	for _, s := range c.streams {
		if err := c.d.lib.check("cuStreamDestroy_v2", c.d.lib.cuStreamDestroy(s)); err != nil && first == nil {
			first = err
		}
	}
	c.streams = nil
	return first
}

// stop closes the context's regions and streams after every request in
// flight and ends the thread; the primary context stays retained (the
// device releases it from the host thread, which may still have it
// current).
func (c *devCtx) stop() error {
	return c.th.stop(func() error {
		var first error
		for r := range c.regions {
			if err := r.release(); err != nil && first == nil {
				first = err
			}
		}
		if err := c.destroyStreams(); err != nil && first == nil {
			first = err
		}
		_ = c.d.lib.cuCtxSetCurrent(0)
		return first
	})
}

// stickyCodes are the results after which the context is unusable: the
// driver documents that "any further CUDA work will return the same
// error" (illegal address, hardware stack error, illegal instruction,
// misaligned address, invalid address space, invalid PC, launch failed).
var stickyCodes = map[cuResult]bool{700: true, 714: true, 715: true, 716: true, 717: true, 718: true, 719: true}

// isSticky reports whether err is a driver result that poisons a context.
func isSticky(err error) bool {
	var ce *CUDAError
	return errors.As(err, &ce) && stickyCodes[cuResult(ce.Code)]
}

// recoverFrom handles a sticky error on this GPU: every region opened in
// the context is refused from now on (ErrReset: the engine must register
// again), the primary context is reset (cuDevicePrimaryCtxReset_v2, which
// destroys what it held), retained afresh, and its streams recreated; if
// it was the home context, the host thread registers host memory again.
// When the context still fails, the GPU is lost (ErrDeviceLost) until the
// daemon restarts. Thread only; returns the error for the copy that met
// cause.
func (c *devCtx) recoverFrom(cause error) error {
	d, l := c.d, c.d.lib
	for r := range c.regions {
		r.dead = fmt.Errorf("gpu: region on %s: the context was reset after %v; register it again: %w", d.describe(c.ord), cause, ErrReset)
		r.closed = true
		delete(c.regions, r)
	}
	c.streams = nil // destroyed by the reset, with the IPC mappings
	clear(c.ipcMaps)
	err := l.check("cuDevicePrimaryCtxReset_v2", l.cuDevicePrimaryCtxReset(c.dev))
	var ctx uintptr
	if err == nil {
		// A fresh handle: retain (and drop the extra reference again).
		err = l.check("cuDevicePrimaryCtxRetain", l.cuDevicePrimaryCtxRetain(&ctx, c.dev))
		if err == nil {
			_ = l.cuDevicePrimaryCtxRelease(c.dev)
			c.ctx.Store(ctx)
			err = l.check("cuCtxSetCurrent", l.cuCtxSetCurrent(ctx))
		}
	}
	if err == nil {
		err = c.makeStreams()
	}
	d.resets.Add(1)
	msg := fmt.Sprintf("%s: %v", d.describe(c.ord), cause)
	if err != nil {
		c.lost = fmt.Errorf("gpu: %s could not be recovered after %v (%v); restart the daemon: %w", d.describe(c.ord), cause, err, ErrDeviceLost)
		msg += " (not recovered: " + err.Error() + ")"
	}
	d.lastReset.Store(&msg)
	if d.isHome(c) {
		d.host.post(d.reregister)
	}
	return fmt.Errorf("gpu: %s: %w; the context was reset and every region on it must be registered again: %w", d.describe(c.ord), cause, ErrReset)
}
