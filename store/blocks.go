package store

import (
	"context"
	"time"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/tiers"
)

// The published files of the mount, as a front end reads, stats and
// removes them by key (a block, a raw block, a sidecar). These are the
// only calls of the tier stack a front end makes; the stack itself stays
// the store's (no front end imports package tiers).

// The types of the tier stack that reach a front end as values.
type (
	// BlockInfo describes a published file across the tiers.
	BlockInfo = tiers.BlockInfo
	// Handle is a published file opened for reading, and where it was found.
	Handle = tiers.Handle
	// Token names the tier file a Handle reads, for ReuseOpen.
	Token = tiers.Token
	// Info describes a published file on the tier that holds it.
	Info = tiers.Info
)

// StatFile describes the published file k (ErrNotFound: no tier holds it).
func (s *Store) StatFile(k format.Key) (BlockInfo, error) { return s.stack.Stat(k) }

// HasFile reports whether a tier holds the published file k.
func (s *Store) HasFile(k format.Key) bool { return s.stack.Has(k) }

// Present is HasFile as a lookup asks it: from the tiers' indexes, a
// shared tier's revalidated first (tiers.Stack.HasKey), as HasBlock does
// for an id.
func (s *Store) Present(k format.Key) bool { return s.stack.HasKey(k) }

// OpenFile opens the published file k for reading from the fastest tier
// holding it, counting the hit and the promotion it may earn.
func (s *Store) OpenFile(k format.Key) (*Handle, error) { return s.stack.Open(k) }

// ReuseOpen reports whether a descriptor of k opened with token t still
// reads k's current file, and if so counts the open as OpenFile does; on
// false the caller closes it and opens again.
func (s *Store) ReuseOpen(k format.Key, t Token) bool { return s.stack.Reuse(k, t) }

// StillCurrent is ReuseOpen without counting a use (a kept descriptor's
// check before it is kept longer).
func (s *Store) StillCurrent(k format.Key, t Token) bool { return s.stack.Current(k, t) }

// SetFileMTime sets the modification time every tier keeps for k.
func (s *Store) SetFileMTime(k format.Key, t time.Time) error { return s.stack.SetMTime(k, t) }

// RemoveFile removes k from every tier. The caller first waits for the
// GPU loads of the block (Removal).
func (s *Store) RemoveFile(k format.Key) error { return s.stack.Delete(k) }

// FlushFile returns once k is durable on a persistent tier (at once on a
// mount without one).
func (s *Store) FlushFile(ctx context.Context, k format.Key) error { return s.stack.Flush(ctx, k) }

// ShardFiles lists the published files of model whose id starts with
// the byte shard, from the tiers' indexes. The slice is the caller's.
func (s *Store) ShardFiles(model string, shard byte) []format.Key {
	return s.stack.ShardKeys(model, shard)
}

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

// PendingWrite is a file being written into the memory tier, published
// by Publish or discarded by AbortFile.
type PendingWrite = tiers.PendingWrite

// CreateFile starts writing k straight into the memory tier (a GPU dump):
// ErrExist when k is published already.
func (s *Store) CreateFile(k format.Key) (*PendingWrite, error) { return s.stack.Create(k) }

// AbortFile discards a file CreateFile started.
func (s *Store) AbortFile(p *PendingWrite) { s.stack.Abort(p) }

// Mapping returns the read-only mapping of k's file in the memory tier
// (nil when it has none); valid while k is pinned (AcquirePin).
func (s *Store) Mapping(k format.Key) []byte { return s.stack.Mapping(k) }

// Touch counts a use of k's memory-tier file read through its mapping.
func (s *Store) Touch(k format.Key) { s.stack.Touch(k) }
