package tiers

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/ucmfs/ucmfs/format"
)

// What a host owes a shared tier. While the shared tier is down (its
// filesystem stalled, a storage daemon or its client gone), write-back
// goes to the private tier in front of it, so the host keeps what it
// published; but the other hosts are promised every publish on the share.
// Each file written back so is owed to the share, and so is each file
// published on the private tier itself (an O_DIRECT file staged on the
// nvme: vLLM's and LMCache's stores; it never passed through memory, so
// write-back never saw it, and no other host ever found it): once the share is up
// again, the files owed are copied to it from the private tier, each
// second (the demotion loop's tick), and a flush that covers one copies it
// at once or fails while the share is still down. (Before, such a file
// reached the share only when the private tier evicted it: a block
// published during an outage of a minute was never seen by another host,
// and a flush after the outage answered "ok flushed" for it.)
//
// The set lives in memory: a daemon restarted before the share came back
// leaves its owed files on its private tier only, where its own reads
// still find them.

// owedSet is the set of keys a host owes one shared tier.
type owedSet struct {
	mu   sync.Mutex
	keys map[format.Key]struct{}
}

// add records k as owed.
func (o *owedSet) add(k format.Key) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.keys == nil {
		o.keys = make(map[format.Key]struct{})
	}
	o.keys[k] = struct{}{}
}

// done forgets k: it is on the share, or no longer anywhere to copy from.
func (o *owedSet) done(k format.Key) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.keys, k)
}

// list is the keys owed that keep says to take (nil: all).
func (o *owedSet) list(keep func(format.Key) bool) []format.Key {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []format.Key
	for k := range o.keys {
		if keep == nil || keep(k) {
			out = append(out, k)
		}
	}
	return out
}

// owe records k, just written back to dirs[to], as owed to every shared
// tier the write-back passed over to get there.
func (s *Stack) owe(k format.Key, to int) {
	if s.dirs[to].Shared() {
		return
	}
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
func (s *Stack) payOne(sd *DirTier, k format.Key) error {
	if k.Kind != format.File {
		if _, err := sd.Stat(k); err == nil {
			sd.Paid(k) // there already (evicted to it, or another host's: a block's name is its contents)
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
		if k.Kind == format.File {
			if _, newer := sd.SupersedeForeign(k, info.MTime); newer {
				sd.Paid(k)
				s.staleVersion(k)
				return nil
			}
		}
		w, opts, err := s.copyOut(src, sd, k)
		if err == nil {
			err = s.commitCopy(src, w, opts, k, func() error { return nil })
		}
		if errors.Is(err, ErrNotFound) || errors.Is(err, ErrCorrupt) {
			continue // removed or replaced meanwhile; a corrupt copy is not sent
		}
		if err != nil {
			return fmt.Errorf("owed %s to %s: %w", k, sd.Name(), err)
		}
		s.stats.writeBacks.Add(1)
		sd.Paid(k)
		return nil
	}
	sd.Paid(k) // on no private tier now: removed (or a new version, which has its own write-back)
	return nil
}
