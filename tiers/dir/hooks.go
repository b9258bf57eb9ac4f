package dir

import (
	"github.com/ucmfs/ucmfs/format"
)

// What the tests of the stack (package tiers) call on directory
// tiers, beyond what the stack itself uses; the daemon calls none of it.

// LowWatermark is the tier's low watermark, a fraction of its capacity
// and of its MaxFiles: eviction frees down to it.
func (t *Tier) LowWatermark() float64 { return t.low }

// ListShard lists key's shard directory of a shared tier again now,
// whatever its TTL and mtime say (nothing on a private tier).
func (t *Tier) ListShard(key format.Key) {
	if sd := t.sharedDir(); sd != nil {
		sd.checkShard(shardRef{model: key.Model, hh: key.ID[0]}, shardCheck{}, true)
	}
}

// TempTag is this process's part of its temp names: "<host>@<pid>".
func TempTag() string { return tempTag }

// WaitCleanups waits for the background clean-ups of Writers the tier
// refused an operation of (closed, Down) to end.
func (t *Tier) WaitCleanups() { t.lates.Wait() }
