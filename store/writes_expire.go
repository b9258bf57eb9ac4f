package store

import (
	"fmt"
	"time"
)

// A staging file whose descriptors are all closed waits for its rename
// (UCM's PosixStore, rsync, the engines' tmp + rename). A writer that dies
// or gives up between its close and its rename leaves it parked: it holds
// a descriptor of the daemon and bytes of the pending budget, and nobody
// will rename it. Parked staging files are discarded after
// Options.StagingTTL (default DefaultStagingTTL) without a descriptor.

// DefaultStagingTTL is Options.StagingTTL's default: far longer than any
// writer takes between its close and its rename.
const DefaultStagingTTL = 10 * time.Minute

// ExpireStaging discards the staging files that have had no descriptor
// for ttl at now, and returns how many; one log line says so.
func (ws Writes) ExpireStaging(now time.Time, ttl time.Duration) int {
	ws.s.writes.mu.Lock()
	var parked []*Draft
	for _, w := range ws.s.writes.m {
		parked = append(parked, w)
	}
	ws.s.writes.mu.Unlock()
	n := 0
	for _, w := range parked {
		if w.discardIfParked(now, ttl) {
			n++
		}
	}
	if n > 0 {
		ws.s.log.Warn("discarded staging files never renamed", "files", n, "idle_for_more_than", ttl)
	}
	return n
}

// expireLoop runs Writes.ExpireStaging every quarter of the TTL until stop closes.
func (s *Store) expireLoop(ttl time.Duration, stop <-chan struct{}) {
	t := time.NewTicker(max(ttl/4, time.Second))
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			s.Writes().ExpireStaging(now, ttl)
		}
	}
}

// discardIfParked discards w if it is a staging file that has had no
// descriptor for ttl at now, checked and done under one lock so that a
// descriptor opened meanwhile keeps it.
func (w *Draft) discardIfParked(now time.Time, ttl time.Duration) bool {
	w.mu.Lock()
	expired := w.staging && !w.done && len(w.descs) == 0 && !w.idle.IsZero() && now.Sub(w.idle) >= ttl
	if expired {
		w.done = true
		w.verdict = fmt.Errorf("%s: parked for %v without a rename: %w", w.key, ttl, ErrDiscarded)
		w.s.stack.Abort(w.pw)
	}
	w.mu.Unlock()
	if expired {
		w.end()
	}
	return expired
}
