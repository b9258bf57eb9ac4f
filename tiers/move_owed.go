package tiers

import (
	"context"
	"errors"
	"fmt"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/layout/registry"
	"github.com/ucmfs/ucmfs/tiers/tier"
)

// What the stack does with the files a host owes a shared tier
// (shared_owed.go): it records them at write-back, and copies them to
// the share once it is up again.

// owe records k, just written back to dirs[to], as owed to every shared
// tier the write-back passed over to get there.
func (s *Stack) owe(k format.Key, to int) {
	if s.dirs[to].Shared() || s.shareMoves.held(k) {
		return // (a File of a directory moved on the share: there under its new name)
	}
	s.markOwed(s.dirs[to], k) // (owed_marks.go)
	for _, d := range s.dirs {
		d.Owe(k) // nothing on a private tier
	}
}

// payOwed copies to each shared tier that is not down the files owed to
// it that keep takes (nil: all), from the private tier that holds them.
// It returns ErrStalled when a shared tier that is down is owed one of
// them, or the first copy's failure.
func (s *Stack) payOwed(ctx context.Context, keep func(format.Key) bool) error {
	var errs []error
	for _, d := range s.dirs {
		keys := d.Owed(keep) // none on a private tier
		if len(keys) == 0 {
			continue
		}
		if d.Health() == Down {
			errs = append(errs, fmt.Errorf("%d files owed: %w", len(keys), d.Stalled("write-back")))
			continue
		}
		for _, k := range keys {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if s.shareMoves.held(k) {
				continue // beneath a directory being moved on the share: there already
			}
			if err := s.payOne(d, k); err != nil {
				errs = append(errs, err)
				break // the share fails: the rest waits for the next round
			}
		}
	}
	return errors.Join(errs...)
}

// payOne copies k from the first private tier that holds it to sd, and
// forgets it as owed once the share has it or nothing holds it. A File
// replaces another host's older version at its name, and is dropped when
// the share's is newer (shared_replace.go).
func (s *Stack) payOne(sd tier.Lower, k format.Key) error {
	if !registry.Of(k).Replaces() {
		if _, err := sd.Stat(k); err == nil {
			s.paid(sd, k) // there already (evicted to it, or another host's: a block's name is its contents)
			return nil
		}
	}
	for _, src := range s.dirs {
		if src.Shared() {
			continue
		}
		info, err := src.Stat(k)
		if err != nil {
			continue
		}
		stale, err := s.payFrom(src, sd, k, info)
		if stale {
			s.paid(sd, k)
			s.staleVersion(k)
			return nil
		}
		if errors.Is(err, ErrNotFound) || errors.Is(err, ErrCorrupt) {
			continue // removed or replaced meanwhile; a corrupt copy is not sent
		}
		if err != nil {
			return fmt.Errorf("owed %s to %s: %w", k, sd.Name(), err)
		}
		s.stats.writeBacks.Add(1)
		s.paid(sd, k)
		return nil
	}
	s.paid(sd, k) // on no private tier now: removed (or a new version, which has its own write-back)
	return nil
}

// payTries bounds the copies payFrom makes of one File.
const payTries = 3

// payFrom copies k, which src holds (info), to the shared tier sd. A File
// first supersedes another host's older version at its name (stale: the
// share's is newer). Another host's version that lands between that
// check and the commit makes the commit meet a file it does not know
// (ErrExist, which commitCopy takes for "there already"): the share
// then holds the other's version, unknown to sd's index, so no check of
// the File ever ran, and this host went on serving its own copy, the
// old version, after the other host replaced the name (vLLM's and
// LMCache's files, published on the nvme, in TestSharedFSEngines). So
// a File that sd does not index after the commit is tried again.
func (s *Stack) payFrom(src, sd tier.Lower, k format.Key, info Info) (stale bool, err error) {
	files := registry.Of(k).Replaces()
	for try := 1; ; try++ {
		if files {
			if _, newer := sd.SupersedeForeign(k, info.MTime); newer {
				return true, nil
			}
		}
		w, opts, err := s.copyOut(src, sd, k)
		if err == nil {
			err = s.commitCopy(src, w, opts, k, func() error { return nil })
		}
		if err != nil || !files || sd.Index().Has(k) || try == payTries {
			return false, err
		}
	}
}
