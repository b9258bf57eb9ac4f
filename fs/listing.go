package fs

import (
	"github.com/ucmfs/ucmfs/tiers"
)

// Shard listings come straight from the tiers' indexes, which keep each
// model's files by shard (tiers.Stack.ShardKeys): listing one shard costs
// what the shard holds, not what the model holds, and needs no cache, so
// publishes and unlinks (through this mount or, on a shared tier, another
// daemon's once indexed) show at once.

// listCache is what fsState keeps for listings: nothing, since the
// indexes answer each listing (the hooks below stay for their callers).
type listCache struct{}

func (c *listCache) init() {}

// shardKeys returns the keys of model in shard, from the tiers' indexes.
func (s *fsState) shardKeys(model string, shard byte) []tiers.Key {
	return s.stack.ShardKeys(model, shard)
}

// listed is called when key was published (present) or removed through
// this mount; the indexes already show it.
func (s *fsState) listed(key tiers.Key, present bool) {}

// forgetListing is called when a model is dropped (rm -r of the model);
// the indexes already show it.
func (s *fsState) forgetListing(model string) {}
