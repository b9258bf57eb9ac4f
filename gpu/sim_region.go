package gpu

import (
	"fmt"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// simRegion is a shared-memory file mapped into the daemon. Copies hold mu
// for reading, Close holds it for writing, so no copy touches a mapping
// after it is unmapped.
type simRegion struct {
	dev  *simDevice
	path string
	size int64

	aborted atomic.Bool // refuses copies at once, before Close takes mu

	mu      sync.RWMutex
	mapping []byte // the whole mapping, page-aligned; nil once closed, and for an empty region
	mem     []byte // the region's window into mapping
	closed  bool
}

// Size implements Region.
func (r *simRegion) Size() int64 { return r.size }

// CopyIn implements Region.
func (r *simRegion) CopyIn(off int64, src []byte) error {
	return r.CopyInBatch([]CopyOp{{Off: off, Host: src}})
}

// CopyOut implements Region.
func (r *simRegion) CopyOut(off int64, dst []byte) error {
	return r.CopyOutBatch([]CopyOp{{Off: off, Host: dst}})
}

// CopyInBatch implements Region. The copies run one after another: on the
// simulated device a copy is a memmove, and the batch is bound by memory
// bandwidth, not by a queue to fill.
func (r *simRegion) CopyInBatch(ops []CopyOp) error {
	return r.batch(ops, true)
}

// CopyOutBatch implements Region.
func (r *simRegion) CopyOutBatch(ops []CopyOp) error {
	return r.batch(ops, false)
}

func (r *simRegion) batch(ops []CopyOp, in bool) error {
	if err := checkOps(r.size, ops); err != nil {
		return err
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.closed || r.aborted.Load() {
		return fmt.Errorf("gpu: region %s: %w", r.path, ErrClosed)
	}
	for _, op := range ops {
		if len(op.Host) == 0 {
			continue
		}
		dev := r.mem[op.Off : op.Off+int64(len(op.Host))]
		var err error
		if in {
			err = guardedCopy(dev, op.Host)
		} else {
			err = guardedCopy(op.Host, dev)
		}
		if err != nil {
			return fmt.Errorf("gpu: region %s offset %d: %w", r.path, op.Off, err)
		}
	}
	return nil
}

// abort refuses every later copy at once.
func (r *simRegion) abort() { r.aborted.Store(true) }

// Close implements Region.
func (r *simRegion) Close() error {
	err := r.closeMapping()
	r.dev.forget(r)
	return err
}

// closeMapping unmaps the region once; it waits for copies in flight.
func (r *simRegion) closeMapping() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	return r.unmap()
}

// unmap releases the mapping (callers hold mu or own r alone).
func (r *simRegion) unmap() error {
	m := r.mapping
	r.mapping, r.mem = nil, nil
	if m == nil {
		return nil
	}
	if err := unix.Munmap(m); err != nil {
		return fmt.Errorf("gpu: unmap region %s: %w", r.path, err)
	}
	return nil
}
