package store

import (
	"fmt"
	"slices"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/layout"
	"github.com/ucmfs/ucmfs/layout/registry"
	"github.com/ucmfs/ucmfs/tiers"
)

// The layout of a model directory (docs/spec.md §2) is a value of
// layout.Layout, found in layout/registry by the name the model's
// settings record (Settings.Layout, "" for the default one); the store
// asks the model's (Models.LayoutOf) or a key's (registry.Of) instead of
// testing names or kinds.

// ParseLayout checks a layout name (registry.Names); errors wrap
// ErrInvalid.
func ParseLayout(s string) (string, error) {
	if _, err := registry.Parse(s); err != nil {
		return "", fmt.Errorf("%w: %w", err, ErrInvalid)
	}
	return s, nil
}

// layoutNamed is the layout a settings record's Layout names: the
// default one for "".
func layoutNamed(name string) layout.Layout {
	if l, ok := registry.ByName(name); ok {
		return l
	}
	return registry.Default()
}

// Layout is the name of model's layout: its record's, the default one's
// when it has none.
func (ms Models) Layout(model string) string { return ms.LayoutOf(model).Name() }

// LayoutOf is the rules of model's layout.
func (ms Models) LayoutOf(model string) layout.Layout {
	return layoutNamed(ms.s.modelSettings(model).Layout)
}

// Staging reports whether name, in the directory dir of model, is a
// staging name: its layout's (layout.Layout.Staging), or in a tree of
// Files a ucmfs tier's own temp name (tiers.IsTempName: another daemon
// whose tier is this model writes back through it: its fsync before the
// rename must not publish the temp name).
func (ms Models) Staging(model, dir, name string) bool {
	l := ms.LayoutOf(model)
	return l.Staging(dir, name) || l.Tree() && tiers.IsTempName(name)
}

// setLayout sets model's layout. It may change only while no tier holds a
// file of the model (ErrNotEmpty otherwise); setting the layout it has is
// always accepted. Errors of a bad name wrap ErrInvalid.
func (s *Store) setLayout(model, value string) error {
	name, err := ParseLayout(value)
	if err != nil {
		return err
	}
	l := layoutNamed(name)
	return s.updateSettings(model, func(v *Settings) error {
		if layoutNamed(v.Layout) == l {
			return nil
		}
		if !s.modelEmpty(model) {
			return fmt.Errorf("layout of model %s: it holds files: %w", model, ErrNotEmpty)
		}
		if l.Tree() {
			if err := s.stack.MarkTree(model); err != nil {
				return err
			}
		}
		v.Layout, v.ShardWidths = name, nil
		if l == registry.Default() {
			v.Layout = ""
		}
		return nil
	})
}

// ShardWidths are the shard widths of a ucm-posix model's directories,
// sorted (none for a ucmb model).
func (ms Models) ShardWidths(model string) []int { return ms.s.modelSettings(model).ShardWidths }

// AddShardWidth records that model has shard directories of width w
// (0..4), as a mkdir of one of them does.
func (ms Models) AddShardWidth(model string, w int) error {
	return ms.s.updateSettings(model, func(v *Settings) error {
		if !slices.Contains(v.ShardWidths, w) {
			v.ShardWidths = append(v.ShardWidths, w)
			slices.Sort(v.ShardWidths)
		}
		return nil
	})
}

// Shards is how many shard directories model has (layout.Layout.Shards).
func (ms Models) Shards(model string) int {
	return ms.LayoutOf(model).Shards(ms, model)
}

// HasKey reports whether a tier holds k (tiers.Stack.HasKey): with
// ShardWidths, the view of the models a layout asks (layout.Models).
func (ms Models) HasKey(k format.Key) bool { return ms.s.stack.HasKey(k) }

// BlockKey is the key of block id of model, by its layout (Layout.BlockKey).
func (ms Models) BlockKey(model string, id format.ID) format.Key {
	return ms.LayoutOf(model).BlockKey(ms, model, id)
}

// HasBlock reports whether a tier holds block id of model (BlockKey's),
// from the tiers' indexes (tiers.Stack.HasKey).
func (ms Models) HasBlock(model string, id format.ID) bool {
	return ms.s.stack.HasKey(ms.BlockKey(model, id))
}

// adoptLayouts runs at mount, after the models are registered: a model
// whose tiers hold raw blocks (an existing UCM data directory used as a
// tier) takes the layout of those blocks when it has no record, and the
// shard widths of its files join its record.
func (s *Store) adoptLayouts() {
	for _, model := range s.models.list() {
		if s.stack.IsTree(model) {
			s.adoptTree(model)
			continue
		}
		widths := s.stack.RawWidths(model)
		if len(widths) == 0 {
			continue
		}
		err := s.updateSettings(model, func(v *Settings) error {
			if v.Layout == "" {
				v.Layout = registry.Of(format.Key{Kind: format.RawKind(widths[0])}).Name()
			}
			for _, w := range widths {
				if !slices.Contains(v.ShardWidths, w) {
					v.ShardWidths = append(v.ShardWidths, w)
				}
			}
			slices.Sort(v.ShardWidths)
			return nil
		})
		if err != nil {
			s.log.Warn("raw blocks' layout not recorded", "model", model, "err", err)
		}
	}
}
