package store

import (
	"github.com/ucmfs/ucmfs/events"
	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/tiers"
)

// startEvents opens the journal of what the tiers hold (package events):
// a "cleared" event first, since whatever a reader was told before the
// daemon started is void, then every block or file that enters or leaves
// a tier from now on. What the tiers held at start is walked by those
// who need it (EachHeld).
func (s *Store) startEvents() {
	s.events = events.New(s.opts.EventsWindow)
	s.events.Append(events.Event{Type: events.Cleared, Tier: -1})
	j := s.events
	s.stack.Observe(func(tier tiers.TierID, key format.Key, size int64, stored bool) {
		if fn := s.listingHook.Load(); fn != nil {
			(*fn)(key)
		}
		if !events.Reported(key) {
			return
		}
		typ := events.Removed
		if stored {
			typ = events.Stored
		}
		h, ok := s.eventHash(tier, key)
		j.Append(events.Event{Type: typ, Tier: int(tier), Size: size, Key: key, Hash: h, HasHash: ok})
	})
}

// Events is the journal of what the tiers hold.
func (s *Store) Events() *events.Journal { return s.events }

// EventTiers names the tiers for event lines (their kinds and mediums).
func (s *Store) EventTiers() events.Tiers {
	ts := s.stack.Tiers()
	kinds := make([]string, len(ts))
	for i, t := range ts {
		kinds[i] = t.Name
	}
	return events.NewTiers(kinds, s.EngineHash)
}

// EachHeld calls fn with every block and file of a files model that tier
// holds now, model by model and shard by shard, until fn returns false;
// the keys of one shard are copied out first, so fn may take its time.
// A key fn gets may have left the tier since (Holds tells).
func (s *Store) EachHeld(tier int, fn func(format.Key) bool) {
	var keys []format.Key
	for _, model := range s.stack.TierModels(tiers.TierID(tier)) {
		for hh := range 256 {
			keys = s.stack.TierShardKeys(tiers.TierID(tier), model, byte(hh), keys[:0])
			for _, k := range keys {
				if events.Reported(k) && !fn(k) {
					return
				}
			}
		}
	}
}

// Holds reports whether tier holds key now.
func (s *Store) Holds(tier int, key format.Key) bool {
	return s.stack.TierHolds(tiers.TierID(tier), key)
}

// OnListingChange sets the hook called with the key of every file that
// enters or leaves a tier (a listing of its directory may change). It
// runs under the tier index's lock: it must not block.
func (s *Store) OnListingChange(fn func(format.Key)) { s.listingHook.Store(&fn) }
