package fs

import (
	"slices"
	"sync"
	"time"

	"github.com/ucmfs/ucmfs/tiers"
)

// listingTTL is how long one walk of a model's keys serves the listings
// of its shard directories. rm -r and ls -R list all 256 shards of a
// model in a row: they walk the model once, not 256 times.
const listingTTL = 2 * time.Second

// listing is a model's keys grouped by shard, as walked at a time.
type listing struct {
	at     time.Time
	shards [256][]tiers.Key
}

// listCache holds one recent listing per model. Publishes and unlinks
// through this mount update it at once; changes by other paths (eviction,
// another daemon on a shared tier) show within listingTTL.
type listCache struct {
	mu sync.Mutex
	m  map[string]*listing
}

func (c *listCache) init() { c.m = make(map[string]*listing) }

// shardKeys returns the keys of model in shard, from a listing at most
// listingTTL old.
func (s *fsState) shardKeys(model string, shard byte) []tiers.Key {
	c := &s.listings
	c.mu.Lock()
	l := c.m[model]
	if l != nil && time.Since(l.at) < listingTTL {
		keys := slices.Clone(l.shards[shard])
		c.mu.Unlock()
		return keys
	}
	c.mu.Unlock()
	l = &listing{at: time.Now()}
	s.stack.List(model, func(k tiers.Key) bool {
		l.shards[k.ID[0]] = append(l.shards[k.ID[0]], k)
		return true
	})
	c.mu.Lock()
	if len(c.m) > 64 { // a bounded cache: drop the expired listings
		for m, old := range c.m {
			if time.Since(old.at) >= listingTTL {
				delete(c.m, m)
			}
		}
	}
	c.m[model] = l
	c.mu.Unlock()
	return slices.Clone(l.shards[shard])
}

// listed records in the cached listing that key was published (present)
// or removed through this mount.
func (s *fsState) listed(key tiers.Key, present bool) {
	c := &s.listings
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.m[key.Model]
	if l == nil {
		return
	}
	sh := &l.shards[key.ID[0]]
	i := slices.Index(*sh, key)
	switch {
	case present && i < 0:
		*sh = append(*sh, key)
	case !present && i >= 0:
		*sh = slices.Delete(*sh, i, i+1)
	}
}

// forgetListing drops a model's cached listing (rm -r of the model).
func (s *fsState) forgetListing(model string) {
	s.listings.mu.Lock()
	delete(s.listings.m, model)
	s.listings.mu.Unlock()
}
