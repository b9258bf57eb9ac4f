package store

import (
	"github.com/ucmfs/ucmfs/tiers"
)

// The published files of the mount, as a front end reads, stats and
// removes them by key (a block, a raw block, a sidecar). A front end
// calls the tier stack itself for them (Tiers): the store adds no rule to
// a stat, an open or a removal of a published file, so it has no call of
// its own that would only pass one on. What the store does have here sums
// or names the tiers for a front end (TierDirs, Space, MemoryCapacity).

// Tiers is the tier stack under the store: the published files by key
// (Stat, Has, HasKey, Open, Reuse, Current, SetMTime, Delete, Flush,
// ShardKeys, Mapping, Touch, ModelDirty, HasShared) and the memory-tier
// files a GPU dump writes (Create, Abort; published by Writes.Publish).
// A removal first waits for the GPU loads of the block (Removal). Writes,
// publishes and model changes go through the store, whose rules they
// pass.
func (s *Store) Tiers() *tiers.Stack { return s.stack }

// The types of the tier stack that reach a front end as values.
type (
	// BlockInfo describes a published file across the tiers.
	BlockInfo = tiers.BlockInfo
	// Handle is a published file opened for reading, and where it was found.
	Handle = tiers.Handle
	// Token names the tier file a Handle reads, for tiers.Stack.Reuse.
	Token = tiers.Token
	// Info describes a published file on the tier that holds it.
	Info = tiers.Info
)

// TierDirs returns the directory of each tier, memory first (its private
// one), for the front end's own files there (a passthrough probe, the
// scratch entries of raw models).
func (s *Store) TierDirs() []string {
	ts := s.stack.Tiers()
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Dir
	}
	return out
}

// Space is what the tiers hold, for statfs.
type Space struct {
	Capacity, Used int64 // bytes, summed over the tiers
	Files          int64 // published files, each once however many tiers hold it
	// MaxFiles is the most files the tiers hold, summed as Capacity is
	// (each tier's bound, tiers.DefaultMaxFiles unless configured; a tier
	// without one counts as NoFileBound).
	MaxFiles int64
}

// NoFileBound is what a tier with no bound on its files adds to
// Space.MaxFiles: 2^32, as many as any filesystem's inode numbers count.
const NoFileBound = 1 << 32

// Space sums the tiers' capacity and use, and counts the published files
// of every model once each (a block in memory and on nvme is one file).
func (s *Store) Space() Space {
	var sp Space
	for _, t := range s.stack.Stats().Tiers {
		sp.Capacity += t.Capacity
		sp.Used += t.Used
		if t.MaxFiles > 0 {
			sp.MaxFiles += t.MaxFiles
		} else {
			sp.MaxFiles += NoFileBound
		}
	}
	for _, model := range s.stack.Models() {
		sp.Files += s.stack.ModelUsage(model).Files
	}
	return sp
}

// MemoryCapacity is the memory tier's capacity in bytes.
func (s *Store) MemoryCapacity() int64 { return s.stack.Tiers()[tiers.Memory].Usage.Capacity }

// MemoryTier is the memory tier's place among the tiers (Handle.TierID).
const MemoryTier = int(tiers.Memory)

// DraftFile is a Draft's file in the memory tier, beneath its publish
// rules (tiers.PendingWrite). A GPU dump writes one straight, with no
// Draft around it: Tiers().Create starts it, Publish publishes it and
// Tiers().Abort discards it.
type DraftFile = tiers.PendingWrite
