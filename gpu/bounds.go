package gpu

import (
	"fmt"
	"runtime/debug"
)

// checkRange reports whether [off, off+n) lies inside a region of size
// bytes, without overflowing: off+n is never computed.
func checkRange(size, off int64, n int) error {
	ln := int64(n)
	if off < 0 || ln > size || off > size-ln {
		return fmt.Errorf("gpu: copy of %d bytes at offset %d in a region of %d bytes: %w", n, off, size, ErrBounds)
	}
	return nil
}

// checkOps checks every op of a batch before any of them runs.
func checkOps(size int64, ops []CopyOp) error {
	for i, op := range ops {
		if err := checkRange(size, op.Off, len(op.Host)); err != nil {
			return fmt.Errorf("batch op %d: %w", i, err)
		}
	}
	return nil
}

// faultAddr is what a runtime panic raised by a memory fault implements
// once debug.SetPanicOnFault is on.
type faultAddr interface{ Addr() uintptr }

// guardedCopy copies src to dst and turns a memory fault (SIGBUS from a
// shared-memory file that shrank under its mapping, SIGSEGV from a
// read-only destination) into ErrFault instead of killing the daemon.
func guardedCopy(dst, src []byte) (err error) {
	old := debug.SetPanicOnFault(true)
	defer func() {
		debug.SetPanicOnFault(old)
		if p := recover(); p != nil {
			f, ok := p.(faultAddr)
			if !ok {
				panic(p)
			}
			err = fmt.Errorf("gpu: copy of %d bytes faulted at %#x: %w", len(src), f.Addr(), ErrFault)
		}
	}()
	copy(dst, src)
	return nil
}
