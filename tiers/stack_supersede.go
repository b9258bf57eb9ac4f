package tiers

import (
	"errors"
	"fmt"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/tiers/tier"
)

// A new version of a name (a PendingWrite with SetReplace) takes the
// published one's place in every index at once, and its files' place on
// the directory tiers only when it is committed there
// (dir/supersede.go). These run under the key's stripe lock.

// supersedeLocked makes way for a new version of k: memory drops the
// published version; each directory tier keeps its file, superseded, for
// the new version's commit there to rename over (a file a tier never
// indexed is removed, as before).
func (s *Stack) supersedeLocked(k format.Key) { s.clearLocked(k, tier.Lower.Supersede) }

// revertLocked takes k's newest version, which did not become durable,
// out of every tier and brings back the version it replaced, if a tier
// still has that one's file (superseded); else k is gone.
func (s *Stack) revertLocked(k format.Key) { s.clearLocked(k, tier.Lower.RestoreSuperseded) }

// clearLocked takes k out of memory and out of each directory tier where
// keep(d, k) does not report that it kept the file its own way.
func (s *Stack) clearLocked(k format.Key, keep func(tier.Lower, format.Key) bool) {
	_ = s.mem.Remove(k)
	for _, d := range s.dirs {
		if s.skipShared(d, k) || keep(d, k) {
			continue
		}
		if err := d.Remove(k); err != nil && !errors.Is(err, ErrNotFound) {
			s.log.Warn("remove failed on a tier", "key", k.String(), "tier", d.Name(), "err", err)
		}
	}
	s.mu.Lock()
	delete(s.verified, k)
	s.mu.Unlock()
}

// dropSupersededLocked unlinks k's superseded files on every directory
// tier but the one at index committed, where k's new version was just
// committed over its own.
func (s *Stack) dropSupersededLocked(k format.Key, committed int) {
	for i, d := range s.dirs {
		if i == committed || s.skipShared(d, k) {
			continue
		}
		if err := d.DropSuperseded(k); err != nil && !errors.Is(err, ErrNotFound) {
			s.log.Warn("remove of a replaced version failed on a tier", "key", k.String(), "tier", d.Name(), "err", err)
		}
	}
}

// abandonSuperseded brings k's superseded files back after a publish of
// a new version failed: the name is what it was before, as after a failed
// rename(2). Unless a version of k is held (another writer's, published
// meanwhile): its write-back renames over them.
func (s *Stack) abandonSuperseded(k format.Key) {
	mu := s.keyLock(k)
	mu.Lock()
	defer mu.Unlock()
	if _, held := s.stat(k); !held {
		for _, d := range s.dirs {
			d.RestoreSuperseded(k)
		}
	}
}

// keepReplaced writes back k's published version when memory holds it
// alone (dirty), before a publish of a new version that may fail after
// the old one was superseded (a durable or write-through publish, a
// direct write to a directory tier): memory drops the old version at
// the supersede, and a tier that has its file keeps it superseded, for
// the failed publish to bring back (revertLocked, abandonSuperseded).
// Without a file on a tier a failed publish left the name with no
// version (TestFailedDurableReplaceKeepsMemoryVersion). An error is the
// publish's: it fails before anything was superseded, the name as it
// was.
//
// A write-back that succeeds need not have written the version memory
// holds now: one published while it copied (another writer's) makes it
// drop its copy, and one it joined (the background's) may have copied
// an older one. So it writes back until memory holds no version alone
// (the soak's seed 1796661469420348906:
// TestDurableReplaceKeepsVersionPublishedDuringKeep), a few times at
// most: a name other writers publish again all the while goes on as
// before, the version memory holds then theirs, not this writer's to
// keep (failing the publish instead failed writers that replace one
// name at once: TestFilesReplacedNeverMissing).
func (s *Stack) keepReplaced(k format.Key) error {
	for try := 0; try < keepTries && s.Persistent() && s.mem.Dirty(k); try++ {
		if err := s.writeBack(k, false); err != nil && !errors.Is(err, ErrNotFound) {
			return fmt.Errorf("%s: writing back the version it replaces: %w", k, err)
		}
	}
	return nil
}

// keepTries bounds keepReplaced's write-backs of a name published again
// while each copied.
const keepTries = 3

// OnPersistent reports whether a directory tier has a file of k: its
// published version, or an older one a version held in memory alone
// superseded (its write-back renames over it). Removing k takes that file
// off the tier: a move of k, or a rename over it, must make what takes
// its place durable first, or a power cut after the removal became
// durable leaves neither (store.Writes.Move, KeepDurable).
func (s *Stack) OnPersistent(k format.Key) bool {
	for _, d := range s.dirs {
		if d.HasFile(k) {
			return true
		}
	}
	return false
}
