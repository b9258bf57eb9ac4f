package gpu

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Staging is a pinned host buffer for copies whose bytes are not in a
// registered mapping: dumps, and loads of blocks read from files. It is
// anonymous memory mapped outside the Go heap and registered with the
// device (cuMemHostRegister) read-write, so the driver DMAs to and from
// it directly instead of staging through its own buffers.
//
// It is not cuMemHostAlloc memory on purpose: that memory belongs to the
// context that allocated it and is freed by a context reset, which would
// leave callers holding a dangling slice; a registration is simply
// redone after a reset (see cudaDevice.reregister), and works before any
// GPU context exists.
type Staging struct {
	dev Device
	b   []byte
}

// NewStaging maps and registers n bytes (rounded up to whole pages).
func NewStaging(dev Device, n int) (*Staging, error) {
	if n <= 0 {
		return nil, fmt.Errorf("gpu: staging buffer of %d bytes: %w", n, ErrBounds)
	}
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
	if err != nil {
		return nil, fmt.Errorf("gpu: map a staging buffer of %d bytes: %w", n, err)
	}
	if err := dev.RegisterHost(b, HostReadWrite); err != nil {
		_ = unix.Munmap(b)
		return nil, err
	}
	return &Staging{dev: dev, b: b}, nil
}

// Bytes is the buffer; it is valid until Close.
func (s *Staging) Bytes() []byte { return s.b }

// Close unregisters the buffer, then unmaps it (in that order: pinned
// pages must never outlive their mapping).
func (s *Staging) Close() error {
	if s.b == nil {
		return nil
	}
	err := s.dev.UnregisterHost(s.b)
	if uerr := unix.Munmap(s.b); uerr != nil && err == nil {
		err = uerr
	}
	s.b = nil
	return err
}
