package tiers

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/layout/registry"
	"github.com/ucmfs/ucmfs/tiers/index"
	"github.com/ucmfs/ucmfs/tiers/tier"
)

// demoteLoop keeps every directory tier under its high watermark: once a
// second, and after each write-back burst; each second it also copies to
// a shared tier that is up what the host owes it (payOwed).
func (s *Stack) demoteLoop() {
	defer s.wg.Done()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		_ = s.payOwed(context.Background(), nil) // each round until the shared tiers are up (move_owed.go)
		for i := range s.dirs {
			if s.dirs[i].OverHigh() {
				s.demote(i)
			}
		}
	}
}

// demote moves the least recently used files of dirs[i] down to dirs[i+1]
// until it is back under its low watermark, in bytes and in files. The last tier drops them: the
// store is a cache, and a dropped block is a miss. Pinned blocks and kept
// files stay, and go to the recent end of the order (drop), so that the
// next look at the oldest end finds others. A shared tier takes the
// oldest mtimes first and never a file younger than its KeepRecent
// (mayEvict): such a file goes to the recent end too.
func (s *Stack) demote(i int) {
	d := s.dirs[i]
	var seen int64 // files looked at since one went
	for d.OverLow() {
		victims := d.Oldest(64)
		progress, passed := false, false
		for _, v := range victims {
			if !d.OverLow() {
				return
			}
			if !d.MayEvict(v.Key) { // used by some daemon lately, or gone
				d.Index().Touch(v.Key)
				passed = true
				continue
			}
			err := s.evictFrom(i, v, false)
			switch {
			case err == nil:
				progress = true
			case errors.Is(err, errStays):
				passed = true
			case !errors.Is(err, ErrNotFound):
				s.log.Warn("demotion failed", "key", v.Key.String(), "tier", d.Name(), "err", err)
			}
		}
		if progress {
			seen = 0
			continue
		}
		if seen += int64(len(victims)); !passed || seen >= d.Usage().Files {
			return
		}
	}
}

// makeRoomOn frees room on dirs[i] for a file of size bytes, by its index
// and by its filesystem (FSNeed): its least recently used files move down
// to the next tier, or out of the last one, as demote does. Files that
// stay (pinned, kept) are passed over. When the last tier holds nothing
// else it may drop, its oldest kept files go too: an engine's own files
// are the last to go, not a way to fill the tier for good. It reports
// whether the file fits now.
func (s *Stack) makeRoomOn(i int, size int64) bool {
	d := s.dirs[i]
	var seen int64 // files looked at since one went
	force := false // kept files go too
	for round := 0; round < 64; {
		need := d.FSNeed(size)
		if need == 0 {
			return true
		}
		var freed int64
		passed := false
		victims := d.Oldest(64)
		for _, v := range victims {
			if freed >= need || freed > 0 && d.FSNeed(size) == 0 { // a tier at its MaxFiles needs a file, not size+1 bytes
				break
			}
			if !d.MayEvict(v.Key) { // used by some daemon lately, or gone
				d.Index().Touch(v.Key)
				passed = true
				continue
			}
			err := s.evictFrom(i, v, force)
			if err == nil {
				freed += max(v.Size, 1) // an empty file frees a file (MaxFiles)
			} else if errors.Is(err, errStays) {
				passed = true
			}
		}
		d.FSForget()
		if freed > 0 {
			seen = 0
			round++
			continue
		}
		if !passed || force {
			return false
		}
		if seen += int64(len(victims)); seen >= d.Usage().Files {
			if i+1 < len(s.dirs) {
				return false
			}
			force = true
			if now, last := time.Now().UnixNano(), s.keptWarned.Load(); now-last > int64(time.Minute) && s.keptWarned.CompareAndSwap(last, now) {
				s.log.Warn("the last tier holds nothing it may drop but kept files (an engine's own: configs, locks, logs, dot files): the oldest of them go", "tier", d.Name(), "files", d.Usage().Files)
			}
		}
	}
	return d.FSNeed(size) == 0
}

// evictFrom takes v, a file Oldest chose, off dirs[i]: down to the next
// tier, or out of the last one (force: a kept file too).
func (s *Stack) evictFrom(i int, v Info, force bool) error {
	if i+1 < len(s.dirs) {
		return s.moveDown(s.dirs[i], s.dirs[i+1], v.Key)
	}
	return s.drop(s.dirs[i], v, force)
}

// moveDown copies k from d to the next tier, then removes it from d.
func (s *Stack) moveDown(d, next tier.Lower, k format.Key) error {
	w, opts, err := s.copyOut(d, next, k)
	if errors.Is(err, ErrCorrupt) {
		s.quarantine(d, k, err)
		return nil
	}
	if err != nil {
		return err
	}
	return s.commitCopy(d, w, opts, k, func() error {
		s.stats.demotions.Add(1)
		return d.Remove(k)
	})
}

// errStays: a file the last tier does not drop, pinned or kept; it goes to
// the recent end of the tier's order, so that eviction looks past it.
var errStays = fmt.Errorf("stays: %w", ErrNotFound)

// drop removes v, the version of a file the last tier holds, from that
// tier and from every tier that holds the same version, unless its block
// is pinned in memory or, without force, it is kept (SetKeep). A block's
// sidecar goes with it. A newer version of the name published since v
// was chosen (a File replaced: its new version in memory, not yet
// written back) is not v: it stays, and v, superseded, is the new
// version's to replace; drop then does nothing (ErrNotFound). (Dropping
// the key from every tier dropped the new version with the old one:
// files written whole vanished under eviction.)
func (s *Stack) drop(d tier.Lower, v Info, force bool) error {
	k := v.Key
	pin := registry.Of(k).BlockOf(k) // a sidecar goes with its block, and stays while it is pinned
	keep := s.keep.Load()
	switch {
	case s.mem.Pinned(pin):
		d.Index().Touch(k)
		return fmt.Errorf("%s: pinned: %w", k, errStays)
	case !force && keep != nil && (*keep)(k):
		d.Index().Touch(k)
		return fmt.Errorf("%s: kept, never dropped while others may be: %w", k, errStays)
	}
	mu := s.keyLock(k)
	mu.Lock()
	dropped := s.dropVersionLocked(d, v)
	mu.Unlock()
	if !dropped {
		return fmt.Errorf("%s: replaced since it was chosen: %w", k, ErrNotFound)
	}
	n := s.stats.drops.Add(1)
	if s.dropLog.Allow(time.Now()) {
		// A drop is never silent: the last tier had no room, and what it
		// held is a miss now. One line a minute, with the count.
		s.log.Info("the last tier made room: files dropped, a miss when asked for again",
			"tier", d.Name(), "dropped", n-s.dropsLogged.Swap(n), "last", k.String())
	}
	if side, ok := registry.Of(k).Sidecar(k); ok {
		s.removeKey(side, false)
	}
	s.signalRoom()
	return nil
}

// dropVersionLocked removes k from every tier whose index holds the
// version v (its size and publish time), under k's stripe lock, if d's
// does; it reports whether d's did.
func (s *Stack) dropVersionLocked(d tier.Lower, v Info) bool {
	k := v.Key
	same := func(x *index.Index) bool {
		info, _, ok := tier.IndexGet(x, k)
		return ok && info.Size == v.Size && info.MTime.Equal(v.MTime)
	}
	if !same(d.Index()) {
		return false
	}
	if same(s.mem.Index()) {
		_ = s.mem.Remove(k)
	}
	for _, t := range s.dirs {
		if !same(t.Index()) {
			continue
		}
		if err := t.Remove(k); err != nil && !errors.Is(err, ErrNotFound) {
			s.log.Warn("remove failed on a tier", "key", k.String(), "tier", t.Name(), "err", err)
		}
	}
	s.mu.Lock()
	delete(s.verified, k)
	s.mu.Unlock()
	return true
}

// Unchanged is mem.Tier.Unchanged of the memory tier, under k's lock so
// that a SetMTime (file and record) is seen whole; for a file not in
// memory, the same check of the first directory tier, where a file staged
// on disk is published (CreateOnDisk) and the kernel may write it too.
func (s *Stack) Unchanged(k format.Key) (unchanged, held bool) {
	mu := s.keyLock(k)
	mu.Lock()
	defer mu.Unlock()
	if unchanged, held = s.mem.Unchanged(k); held || len(s.dirs) == 0 {
		return unchanged, held
	}
	d := s.dirs[0]
	info, _, ok := tier.IndexGet(d.Index(), k)
	if !ok || !d.InPlace() {
		return false, false
	}
	return tier.SameFile(d.Root(), k.Path(), info)
}

// Remove deletes k from every tier; removing a block removes its sidecar
// too. Open descriptors keep reading their data. ErrNotFound when no tier
// held k.
func (s *Stack) Remove(k format.Key) error { return s.remove(k, false) }

// Delete is Remove for a user's removal (unlink, a rename over, rm): a
// local tier moves the file into its trash and unlinks it behind
// (dir/trash.go), so the removal answers sooner. The stack's own removals
// (eviction, the drops that make room) use Remove: they need the space
// now.
func (s *Stack) Delete(k format.Key) error { return s.remove(k, true) }

func (s *Stack) remove(k format.Key, trash bool) error {
	removed, err := s.removeKey(k, trash)
	if err != nil {
		return err
	}
	if side, ok := registry.Of(k).Sidecar(k); ok {
		s.removeKey(side, trash)
	}
	if !removed {
		return fmt.Errorf("%s: %w", k, ErrNotFound)
	}
	s.signalRoom()
	return nil
}

func (s *Stack) removeKey(k format.Key, trash bool) (bool, error) {
	mu := s.keyLock(k)
	mu.Lock()
	defer mu.Unlock()
	return s.removeKeyLocked(k, trash)
}

// removeKeyLocked is removeKey under k's stripe lock; trash: into the
// local tiers' trash (Delete). It reports whether a tier held k.
//
// A directory tier that fails to remove its file fails the removal,
// and memory keeps its copy: the name is still there, and the caller
// is told (EIO, ETIMEDOUT at the mount), never told it is gone while
// a tier keeps the file, which a read finds again once the tier is
// back. A tier that is Down and holds k fails it before anything is
// removed. Before, the failure was logged: the removal answered done
// when memory held k (the soak's "back"), and not found when it did not
// (its "gone"), with the file still on the tier.
func (s *Stack) removeKeyLocked(k format.Key, trash bool) (bool, error) {
	for _, d := range s.dirs {
		if d.Health() == Down && d.Index().Has(k) && !s.skipShared(d, k) {
			return false, fmt.Errorf("%s: %w", k, d.Stalled("remove"))
		}
	}
	removed := false
	var failed error
	for _, d := range s.dirs {
		if s.skipShared(d, k) {
			continue
		}
		dirRemove := d.Remove
		if trash {
			dirRemove = d.Delete
		}
		if err := dirRemove(k); err == nil {
			removed = true
		} else if !errors.Is(err, ErrNotFound) && failed == nil {
			failed = fmt.Errorf("%s: %w", k, err)
		}
	}
	s.mu.Lock()
	delete(s.verified, k)
	s.mu.Unlock()
	if failed != nil {
		return removed, failed
	}
	memRemove := s.mem.Remove
	if trash {
		memRemove = s.mem.RemoveLate
	}
	if err := memRemove(k); err == nil {
		removed = true
	}
	return removed, nil
}

// RemoveModel drops every block and sidecar of model from every tier.
func (s *Stack) RemoveModel(model string) error {
	if err := format.ValidateModel(model); err != nil {
		return err
	}
	errs := []error{s.mem.RemoveModel(model)}
	s.forgetMeta(model)
	for _, d := range s.dirs {
		errs = append(errs, d.RemoveModel(model))
	}
	s.signalRoom()
	return errors.Join(errs...)
}
