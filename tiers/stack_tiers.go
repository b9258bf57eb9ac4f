package tiers

import (
	"errors"
	"fmt"
	"slices"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/tiers/index"
	"github.com/ucmfs/ucmfs/tiers/tier"
)

// TierID is a tier's place in a stack: Memory (0) for the memory tier,
// then 1, 2, ... for the directory tiers in the order the stack was built
// with, fastest first. It indexes the slice Tiers returns.
type TierID = tier.ID

// Memory is the TierID of a stack's memory tier.
const Memory TierID = 0

// TierInfo describes one tier of a stack, as Tiers reports it.
type TierInfo struct {
	ID         TierID
	Name       string // the kind: "mem", "nvme", "nfs" or "ds3fs"
	Dir        string // root directory (the memory tier's private one)
	Persistent bool   // files survive a restart (every directory tier)
	Health     Health // Up for the memory tier
	Usage      Usage
	// LinksRefused counts the symbolic links the tier met and refused.
	LinksRefused int64
	// Probes counts a directory tier's health probes.
	Probes int64
}

// Tiers describes the stack's tiers, memory first: Tiers()[id] is the
// tier id. The slice is the caller's.
func (s *Stack) Tiers() []TierInfo {
	out := make([]TierInfo, 0, 1+len(s.dirs))
	out = append(out, TierInfo{ID: Memory, Name: s.mem.Name(), Dir: s.mem.Dir(), Health: Up, Usage: s.mem.Usage(),
		LinksRefused: s.mem.Root().Links()})
	for i, d := range s.dirs {
		out = append(out, TierInfo{ID: TierID(i + 1), Name: d.Name(), Dir: d.Dir(), Persistent: true,
			Health: d.Health(), Usage: d.Usage(), LinksRefused: d.Links(), Probes: d.Probes()})
	}
	return out
}

// Syncfs syncs the filesystem directory tier id stands on, through the
// filesystem the tier was given (dir.Tier.Syncfs), not by its path.
func (s *Stack) Syncfs(id TierID) error {
	if id <= Memory || int(id) > len(s.dirs) {
		return fmt.Errorf("syncfs of tier %d: %w", id, ErrNotFound)
	}
	return s.dirs[id-1].Syncfs()
}

// tierAt is the tier id.
func (s *Stack) tierAt(id TierID) Tier {
	if id == Memory {
		return s.mem
	}
	return s.dirs[id-1]
}

// Models returns the models any tier holds files of, sorted, each once.
func (s *Stack) Models() []string {
	names := s.mem.Models()
	for _, d := range s.dirs {
		names = append(names, d.Models()...)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// ModelCount is what one model stores: its block files, all its files
// (blocks and sidecars) and their bytes.
type ModelCount struct {
	Blocks, Files, Bytes int64
}

// modelCounts is index.ModelCount as ModelCounts.
func modelCounts(x *index.Index, model string) (all, dirty ModelCount) {
	a, d := x.ModelCount(model)
	return ModelCount(a), ModelCount(d)
}

// add adds c to m.
func (m *ModelCount) add(c ModelCount) {
	m.Blocks += c.Blocks
	m.Files += c.Files
	m.Bytes += c.Bytes
}

// ModelUsage counts the distinct files of model in the stack, each file
// counted once however many tiers hold it, from the tiers' per-model
// counters (no walk, no syscall). With directory tiers, a clean block in
// memory is also on a directory tier (written back, or promoted from one),
// so the distinct files are the directory tiers' files plus the memory
// tier's dirty ones; a memory-only stack holds each file once. A file
// being moved between two directory tiers (demotion) counts twice for the
// moment of the copy.
func (s *Stack) ModelUsage(model string) ModelCount {
	all, dirty := modelCounts(s.mem.Index(), model)
	if len(s.dirs) == 0 {
		return all
	}
	for _, d := range s.dirs {
		c, _ := modelCounts(d.Index(), model)
		dirty.add(c)
	}
	return dirty
}

// ModelDirty reports whether the memory tier holds a file of model that
// is not yet on a persistent tier, from its per-model counter (no walk).
func (s *Stack) ModelDirty(model string) bool {
	_, dirty := modelCounts(s.mem.Index(), model)
	return dirty.Files > 0 || dirty.Blocks > 0
}

// DirtyShardKeys returns the files of model whose id starts with the
// byte shard that the memory tier holds dirty (not yet on a persistent
// tier), without listing the clean ones.
func (s *Stack) DirtyShardKeys(model string, shard byte) []format.Key {
	return s.mem.Index().DirtyShardKeys(model, shard)
}

// RawWidths returns the shard widths of which some tier holds raw files
// (UCM's names) of model, in increasing order, from the indexes'
// counters (no walk).
func (s *Stack) RawWidths(model string) []int {
	widths := s.mem.Index().RawWidths(model, nil)
	for _, d := range s.dirs {
		widths = d.Index().RawWidths(model, widths)
	}
	slices.Sort(widths)
	return widths
}

// HasModel reports whether any tier holds a file of model or, for a
// shared tier, a directory of it (another daemon's model).
func (s *Stack) HasModel(model string) bool {
	if n, _ := s.mem.Index().ModelUsage(model); n > 0 {
		return true
	}
	for _, d := range s.dirs {
		if d.HasModel(model) {
			return true
		}
	}
	return false
}

// keepLost marks dirty again what the memory tier holds of keys, the
// files a directory tier lost with its directory (dir/root.go), and
// queues them for write-back: they go where they belong once a tier
// takes them again, and the clean stop writes them. It returns how many
// memory holds.
func (s *Stack) keepLost(keys []format.Key) int {
	kept := 0
	for _, k := range keys {
		mu := s.keyLock(k)
		mu.Lock()
		held := false
		if _, err := s.mem.Stat(k); err == nil {
			held = s.mem.Dirty(k) || s.mem.SetDirty(k, true) == nil
		}
		mu.Unlock()
		if held {
			kept++
			s.queueDirty(k)
		}
	}
	return kept
}

// RecordOwner records, beside the lock of each private directory tier,
// this daemon's pid and the number of its FUSE connection (its mount's
// minor device number), for the next daemon to free the lock if this one
// dies stuck in the kernel.
func (s *Stack) RecordOwner(fuseConn uint32) error {
	var errs []error
	for _, d := range s.dirs {
		if err := d.RecordOwner(fuseConn); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
