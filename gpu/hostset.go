package gpu

import (
	"fmt"
	"sort"
	"sync"
	"unsafe"
)

// hostRange is one registered host range. It keeps the slice itself, so
// Go-allocated memory stays alive while the driver may DMA to it.
type hostRange struct {
	start, end uintptr
	b          []byte
	access     HostAccess
}

// hostSet is the bookkeeping of registered host memory, shared by both
// devices: it refuses overlaps and unknown unregistrations the same way on
// each (so the simulated device behaves like the driver), and it lets
// Close unregister what callers left registered.
type hostSet struct {
	mu     sync.Mutex
	ranges []hostRange // sorted by start, non-overlapping
}

// bounds returns the address range of b, or an error for an empty slice.
func bounds(b []byte) (start, end uintptr, err error) {
	if len(b) == 0 {
		return 0, 0, fmt.Errorf("gpu: register an empty host range: %w", ErrBounds)
	}
	start = uintptr(unsafe.Pointer(&b[0]))
	return start, start + uintptr(len(b)), nil
}

// add records b, failing with ErrRegistered when it overlaps a recorded
// range. register runs with the set locked and b recorded only when it
// succeeds (the driver call for CUDA).
func (s *hostSet) add(b []byte, access HostAccess, register func(hostRange) error) error {
	start, end, err := bounds(b)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	i := sort.Search(len(s.ranges), func(i int) bool { return s.ranges[i].start >= start })
	if i < len(s.ranges) && s.ranges[i].start < end || i > 0 && s.ranges[i-1].end > start {
		return fmt.Errorf("gpu: host range %#x+%d: %w", start, len(b), ErrRegistered)
	}
	r := hostRange{start: start, end: end, b: b, access: access}
	if register != nil {
		if err := register(r); err != nil {
			return err
		}
	}
	s.ranges = append(s.ranges, hostRange{})
	copy(s.ranges[i+1:], s.ranges[i:])
	s.ranges[i] = r
	return nil
}

// remove forgets the range that starts at &b[0]; unregister runs with the
// set locked, and the range is forgotten only when it succeeds.
func (s *hostSet) remove(b []byte, unregister func(hostRange) error) error {
	start, _, err := bounds(b)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	i := sort.Search(len(s.ranges), func(i int) bool { return s.ranges[i].start >= start })
	if i == len(s.ranges) || s.ranges[i].start != start {
		return fmt.Errorf("gpu: host range %#x: %w", start, ErrNotRegistered)
	}
	if unregister != nil {
		if err := unregister(s.ranges[i]); err != nil {
			return err
		}
	}
	s.ranges = append(s.ranges[:i], s.ranges[i+1:]...)
	return nil
}

// drain forgets every range and returns them (for Close).
func (s *hostSet) drain() []hostRange {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.ranges
	s.ranges = nil
	return out
}
