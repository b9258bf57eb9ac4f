package tiers

import (
	"iter"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/tiers/index"
)

// Observer is told of every file that enters a tier of a stack (stored
// true: a publish, a promotion, a write-back or demotion, a file another
// host put in a shared tier) and of every file that leaves one (an
// eviction, a demotion's source, an unlink, a file gone from a shared
// tier). It runs under the tier index's lock, on the data path: it must
// not block or call the stack.
type Observer func(tier TierID, key format.Key, size int64, stored bool)

// Observe installs fn (nil: none) on every tier. Files already held are
// not reported: walk them with ShardKeys.
func (s *Stack) Observe(fn Observer) {
	for id, x := range s.indexes() {
		if fn == nil {
			x.SetObserver(nil)
			continue
		}
		id := TierID(id)
		x.SetObserver(func(e *index.Entry, stored bool) { fn(id, e.Key(), e.Size, stored) })
	}
}

// indexes are the tiers' indexes, by TierID.
func (s *Stack) indexes() []*index.Index {
	out := make([]*index.Index, 0, 1+len(s.dirs))
	out = append(out, s.mem.Index())
	for _, d := range s.dirs {
		out = append(out, d.Index())
	}
	return out
}

// TierModels names the models tier id holds files of (none for an id
// out of range).
func (s *Stack) TierModels(id TierID) []string {
	if x := s.indexOf(id); x != nil {
		return x.ModelNames()
	}
	return nil
}

// TierShardKeys appends to keys those of the files of model that tier id
// holds in shard hh (the first byte of their ids) and returns the slice.
func (s *Stack) TierShardKeys(id TierID, model string, hh byte, keys []format.Key) []format.Key {
	if x := s.indexOf(id); x != nil {
		return x.ShardKeys(model, hh, keys)
	}
	return keys
}

// TierLockedShard calls fn as index.Index.LockedShard does, with the
// files of model that tier id holds in shard hh (none for an id out of
// range): fn runs under the tier index's lock, where the Observer does.
func (s *Stack) TierLockedShard(id TierID, model string, hh byte, fn func(files iter.Seq2[format.Key, int64])) {
	if x := s.indexOf(id); x != nil {
		x.LockedShard(model, hh, fn)
		return
	}
	fn(func(func(format.Key, int64) bool) {})
}

// TierHolds reports whether tier id holds key now.
func (s *Stack) TierHolds(id TierID, key format.Key) bool {
	x := s.indexOf(id)
	return x != nil && x.Has(key)
}

// indexOf is tier id's index, nil for an id out of range.
func (s *Stack) indexOf(id TierID) *index.Index {
	switch {
	case id == Memory:
		return s.mem.Index()
	case id > 0 && int(id) <= len(s.dirs):
		return s.dirs[id-1].Index()
	}
	return nil
}
