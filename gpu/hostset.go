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
	pinned     bool // registered with the driver (CUDA), not only recorded
}

// hostSet is the bookkeeping of registered host memory, shared by both
// devices: it refuses overlaps and unknown unregistrations the same way on
// each (so the simulated device behaves like the driver), and it lets
// Close unregister what callers left registered.
type hostSet struct {
	mu     sync.Mutex
	ranges []*hostRange // sorted by start, non-overlapping
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
func (s *hostSet) add(b []byte, access HostAccess, register func(*hostRange) error) error {
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
	r := &hostRange{start: start, end: end, b: b, access: access}
	if register != nil {
		if err := register(r); err != nil {
			return err
		}
	}
	s.ranges = append(s.ranges, nil)
	copy(s.ranges[i+1:], s.ranges[i:])
	s.ranges[i] = r
	return nil
}

// remove forgets the range that starts at &b[0] and runs unregister on
// it, with the set locked. The range is forgotten whatever unregister
// returns: the caller unmaps the memory next, and a range kept after that
// would be registered again (after a context reset) at an address that
// holds nothing.
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
	r := s.ranges[i]
	s.ranges = append(s.ranges[:i], s.ranges[i+1:]...)
	if unregister != nil {
		return unregister(*r)
	}
	return nil
}

// each calls f on every range, with the set locked.
func (s *hostSet) each(f func(*hostRange)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.ranges {
		f(r)
	}
}

// counts returns how many ranges are recorded, their bytes, and how many
// of them are not registered with the driver.
func (s *hostSet) counts() (ranges int, bytes int64, pending int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.ranges {
		bytes += int64(r.end - r.start)
		if !r.pinned {
			pending++
		}
	}
	return len(s.ranges), bytes, pending
}

// drain forgets every range and returns them (for Close).
func (s *hostSet) drain() []hostRange {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]hostRange, len(s.ranges))
	for i, r := range s.ranges {
		out[i] = *r
	}
	s.ranges = nil
	return out
}

// TierPages adapts dev to the memory tier's registration hook
// (tiers.MemConfig.Host): every mapping the tier locks is registered with
// the device for DMA, read-only, as the tier maps it. The device must
// stay open until the memory tier is closed.
type TierPages struct{ Dev Device }

// Register registers b read-only.
func (h TierPages) Register(b []byte) error { return h.Dev.RegisterHost(b, HostReadOnly) }

// Unregister unregisters b.
func (h TierPages) Unregister(b []byte) error { return h.Dev.UnregisterHost(b) }
