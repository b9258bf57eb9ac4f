package gpu

import (
	"fmt"
	"sync"
)

// Session holds the regions one engine connection registered (one
// descriptor of .ucm/gpu), so that they die with it at once: Close
// refuses every later copy of every region immediately, copies already
// queued behind other work included, before it unmaps them. A copy
// running at that moment finishes (or fails) first; the device closes
// the region after it.
type Session struct {
	dev Device

	mu      sync.Mutex
	regions map[Region]struct{}
	closed  bool
}

// aborter is a region that can refuse copies before it is closed.
type aborter interface{ abort() }

// NewSession starts a session on dev.
func NewSession(dev Device) *Session {
	return &Session{dev: dev, regions: make(map[Region]struct{})}
}

// OpenRegion opens a region on the session's device and keeps it.
func (s *Session) OpenRegion(spec RegionSpec) (Region, error) {
	r, err := s.dev.OpenRegion(spec)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		r.Close()
		return nil, fmt.Errorf("gpu: session: %w", ErrClosed)
	}
	s.regions[r] = struct{}{}
	return r, nil
}

// CloseRegion closes one region of the session and forgets it.
func (s *Session) CloseRegion(r Region) error {
	s.mu.Lock()
	delete(s.regions, r)
	s.mu.Unlock()
	return r.Close()
}

// Len is the number of regions the session holds.
func (s *Session) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.regions)
}

// Close aborts every region at once, then closes them; the first error
// is returned. A second Close is a no-op.
func (s *Session) Close() error {
	s.mu.Lock()
	regions := s.regions
	s.regions, s.closed = nil, true
	s.mu.Unlock()
	for r := range regions {
		if a, ok := r.(aborter); ok {
			a.abort()
		}
	}
	var first error
	for r := range regions {
		if err := r.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}
