package tiers

// WaitLocked waits until the locking worker has handled every file
// committed so far (tests only).
func (t *MemTier) WaitLocked() {
	if t.lockq != nil {
		t.lockq.idle()
	}
}
