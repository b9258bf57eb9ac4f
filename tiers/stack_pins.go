package tiers

// Pin keeps k in memory (promoting it first) or releases it.
func (s *Stack) Pin(k Key, pinned bool) error {
	if pinned {
		if err := s.Promote(k); err != nil {
			return err
		}
	}
	mu := s.keyLock(k)
	mu.Lock()
	defer mu.Unlock()
	return s.mem.SetPinned(k, pinned)
}
