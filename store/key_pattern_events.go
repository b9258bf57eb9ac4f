package store

import (
	"iter"
	"sync"
	"sync/atomic"

	"github.com/ucmfs/ucmfs/events"
	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/layout/registry"
	"github.com/ucmfs/ucmfs/tiers"
)

// A new key_pattern changes the hash every file the model holds is known
// by, and routers know the files by the hashes they were told. So
// setKeyPattern announces the change on the journal, tier by tier and
// shard by shard (the first byte of the files' ids), each under its tier
// index's lock: a "removed" event under the old hash for every file of
// the shard, then a "stored" one under the new hash. Until its shard is
// announced, a file's events in that tier keep the old hash, so a router
// is never told of a removal under a hash it was not told was stored,
// and misses no file.

// rekeyTable holds the key_pattern changes being announced.
type rekeyTable struct {
	mu sync.Mutex // serializes key_pattern changes, held across an announce
	m  sync.Map   // model → *rekey, while its change is announced
}

// rekey is one key_pattern change being announced: the pattern before it
// ("" the default rule), and per tier how many shards are announced
// (files in shards below it have the new hash).
type rekey struct {
	old  string
	done []atomic.Int32
}

// setKeyPattern writes model's key_pattern ("default": none) and
// announces the hashes it changes.
func (s *Store) setKeyPattern(model, value string) error {
	if value == "default" {
		value = ""
	}
	if value != "" {
		if _, err := compileKeyPattern(value); err != nil {
			return err
		}
	}
	s.rekeys.mu.Lock()
	defer s.rekeys.mu.Unlock()
	old := s.modelSettings(model).KeyPattern
	if old == value {
		return nil
	}
	rk := &rekey{old: old, done: make([]atomic.Int32, len(s.stack.Tiers()))}
	s.rekeys.m.Store(model, rk)
	defer s.rekeys.m.Delete(model)
	err := s.updateSettings(model, func(st *Settings) error { st.KeyPattern = value; return nil })
	if cur, _ := s.cachedSettings(model); cur.KeyPattern == value {
		// In force (an error persisting it leaves it so until a restart).
		s.announceRekey(model, rk, value)
	}
	return err
}

// announceRekey appends, shard by shard of each tier, the removal under
// the old pattern's hash and the storing under the new one of each file
// of model whose hash the change changes.
func (s *Store) announceRekey(model string, rk *rekey, pattern string) {
	type file struct {
		k    format.Key
		size int64
	}
	var changed []file
	for tier := range rk.done {
		for hh := range 256 {
			s.stack.TierLockedShard(tiers.TierID(tier), model, byte(hh), func(files iter.Seq2[format.Key, int64]) {
				changed = changed[:0]
				for k, size := range files {
					oh, ook := patternHash(rk.old, k)
					nh, nok := patternHash(pattern, k)
					if events.Reported(k) && (oh != nh || ook != nok) {
						changed = append(changed, file{k, size})
					}
				}
				for _, f := range changed {
					h, ok := patternHash(rk.old, f.k)
					s.events.Append(events.Event{Type: events.Removed, Tier: tier, Size: f.size, Key: f.k, Hash: h, HasHash: ok})
				}
				for _, f := range changed {
					h, ok := patternHash(pattern, f.k)
					s.events.Append(events.Event{Type: events.Stored, Tier: tier, Size: f.size, Key: f.k, Hash: h, HasHash: ok})
				}
				rk.done[tier].Store(int32(hh + 1))
			})
		}
	}
}

// eventHash is the hash the event of file k entering or leaving tier
// says: EngineHash from the settings read already (the tiers' observer
// must not read a record from the tiers; every model's is read at mount
// and when made), and the old pattern's where the model's key_pattern is
// changing and k's shard in tier is not announced yet.
func (s *Store) eventHash(tier tiers.TierID, k format.Key) (uint64, bool) {
	if !registry.Of(k).Tree() {
		return events.EngineHash(k)
	}
	if v, ok := s.rekeys.m.Load(k.Model); ok {
		rk := v.(*rekey)
		if int(tier) < len(rk.done) && int32(k.ID[0]) >= rk.done[tier].Load() {
			return patternHash(rk.old, k)
		}
	}
	st, _ := s.cachedSettings(k.Model)
	return patternHash(st.KeyPattern, k)
}
