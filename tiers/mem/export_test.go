package mem

// WaitLocked waits until the locking worker has handled every file
// committed so far (tests only).
func (t *Tier) WaitLocked() {
	if t.lockq != nil {
		t.lockq.idle()
	}
}

// HoldLate keeps the late-drop worker from releasing anything until the
// returned function is called (tests only).
func (t *Tier) HoldLate() (resume func()) {
	t.late.run.Lock()
	return t.late.run.Unlock
}

// LateMaxFiles is lateMaxFiles (tests only).
const LateMaxFiles = lateMaxFiles
