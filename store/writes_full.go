package store

import "fmt"

// A file being written whose bytes the kernel writes itself (FUSE
// passthrough) into the memory tier's filesystem fails there with ENOSPC
// when that filesystem is full (its size is the tier's capacity plus the
// pending budget, pending_budget.go), and the daemon sees no such write:
// the writer gets the error, and its close would publish what is there,
// a file short of what it meant; the raw layouts have no header to tell.
// The daemon cannot see the failed write, but it can see the full
// filesystem (tiers.Stack.MemFSFull): every file open for writing while
// it is seen full, at the refresh every second and at each publish, is
// taken as one whose write may have failed, and never publishes
// (errMemFSFull: ENOSPC at its close or rename), as a write the daemon
// saw fail (Draft.failed). A file open while the filesystem filled and
// emptied again between two looks is not caught.

// errMemFSFull is the verdict of a file open for writing while the
// memory tier's filesystem was seen full.
var errMemFSFull = fmt.Errorf("the memory tier's filesystem was full while the file was open for writing: %w", ErrPendingFull)

// markFullWrites takes every file of drafts that has a descriptor open
// as one whose write may have failed, when the memory tier's filesystem
// is full now.
func (s *Store) markFullWrites(drafts []*Draft) {
	if len(drafts) == 0 || !s.stack.MemFSFull() {
		return
	}
	for _, w := range drafts {
		w.mu.RLock()
		open := len(w.descs) > 0 && !w.done
		w.mu.RUnlock()
		if open {
			w.failed.CompareAndSwap(nil, &errMemFSFull)
		}
	}
}
