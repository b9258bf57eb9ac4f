package store

import (
	"fmt"
	"slices"

	"github.com/ucmfs/ucmfs/format"
)

// The layouts of a model directory (docs/spec.md §2).
const (
	// LayoutUCMB: <model>/<hh>/<id>.bin and .repr, UCMB headers.
	LayoutUCMB = "ucmb"
	// LayoutUCMPosix: UCM PosixStore's names, <model>/<shard>/<id>
	// holding the raw payload, shard directories of 0 ("data") to 4 hex
	// characters made by the store's own mkdir.
	LayoutUCMPosix = "ucm-posix"
	// LayoutFiles: any tree of names an engine makes, each file raw
	// (layout_files.go).
	LayoutFiles = "files"
)

// Layout is the rules of one layout of a model directory: what a block
// id names, what publishing over a published name does, what a tier file
// holds. Each layout is one value in layouts; the store asks the model's
// (Models.LayoutOf) instead of testing names.
type Layout interface {
	// Name is the layout's name, the value of user.ucm.layout.
	Name() string
	// BlockKey is the key that block id of model names: the file .ucm/
	// requests and GPU dumps name by id.
	BlockKey(s *Store, model string, id format.ID) format.Key
	// Replaces reports whether a file published under a name that is
	// published already replaces it (files: a name is the engine's,
	// written again with new bytes) or is dropped as a second copy of the
	// same block (ucmb, ucm-posix: a name is the block's content).
	Replaces() bool
	// Headerless reports whether the model's files are all payload, with
	// no UCMB header.
	Headerless() bool
}

// layouts are the layouts by name.
var layouts = map[string]Layout{
	LayoutUCMB:     ucmbLayout{},
	LayoutUCMPosix: posixLayout{},
	LayoutFiles:    filesLayout{},
}

// ParseLayout checks a layout name ("ucmb", "ucm-posix" or "files");
// errors wrap ErrInvalid.
func ParseLayout(s string) (string, error) {
	if _, ok := layouts[s]; ok {
		return s, nil
	}
	return "", fmt.Errorf("layout %q: want %s, %s or %s: %w", s, LayoutUCMB, LayoutUCMPosix, LayoutFiles, ErrInvalid)
}

// Layout is model's layout: its record's, LayoutUCMB when it has none.
func (ms Models) Layout(model string) string {
	if l := ms.s.modelSettings(model).Layout; l != "" {
		return l
	}
	return LayoutUCMB
}

// LayoutOf is the rules of model's layout.
func (ms Models) LayoutOf(model string) Layout { return layouts[ms.Layout(model)] }

// Raw reports whether model has the ucm-posix layout.
func (ms Models) Raw(model string) bool { return ms.Layout(model) == LayoutUCMPosix }

// Files reports whether model has the files layout.
func (ms Models) Files(model string) bool { return ms.Layout(model) == LayoutFiles }

// ucmbLayout is LayoutUCMB.
type ucmbLayout struct{}

func (ucmbLayout) Name() string     { return LayoutUCMB }
func (ucmbLayout) Replaces() bool   { return false }
func (ucmbLayout) Headerless() bool { return false }
func (ucmbLayout) BlockKey(_ *Store, model string, id format.ID) format.Key {
	return format.Key{Model: model, ID: id, Kind: format.Block}
}

// posixLayout is LayoutUCMPosix.
type posixLayout struct{}

func (posixLayout) Name() string     { return LayoutUCMPosix }
func (posixLayout) Replaces() bool   { return false }
func (posixLayout) Headerless() bool { return true }

// BlockKey is the raw block of the first of the model's shard widths that
// holds it (else of its first width, DefaultShardWidth when it has none).
func (posixLayout) BlockKey(s *Store, model string, id format.ID) format.Key {
	v := s.modelSettings(model)
	if len(v.ShardWidths) == 0 {
		return format.Key{Model: model, ID: id, Kind: format.RawKind(DefaultShardWidth)}
	}
	for _, w := range v.ShardWidths {
		if k := (format.Key{Model: model, ID: id, Kind: format.RawKind(w)}); s.stack.HasKey(k) {
			return k
		}
	}
	return format.Key{Model: model, ID: id, Kind: format.RawKind(v.ShardWidths[0])}
}

// setLayout sets model's layout. It may change only while no tier holds a
// file of the model (ErrNotEmpty otherwise); setting the layout it has is
// always accepted. Errors of a bad name wrap ErrInvalid.
func (s *Store) setLayout(model, value string) error {
	layout, err := ParseLayout(value)
	if err != nil {
		return err
	}
	return s.updateSettings(model, func(v *Settings) error {
		cur := v.Layout
		if cur == "" {
			cur = LayoutUCMB
		}
		if cur == layout {
			return nil
		}
		if !s.modelEmpty(model) {
			return fmt.Errorf("layout of model %s: it holds files: %w", model, ErrNotEmpty)
		}
		if layout == LayoutFiles {
			if err := s.stack.MarkTree(model); err != nil {
				return err
			}
		}
		v.Layout, v.ShardWidths = layout, nil
		if layout == LayoutUCMB {
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

// DefaultShardWidth is the width a ucm-posix model's blocks are written
// under by a writer that names no shard (a GPU dump) while the model has
// no shard directory yet: UCM's default data_dir_shard_bytes.
const DefaultShardWidth = 3

// BlockKey is the key of block id of model, by its layout (Layout.BlockKey).
func (ms Models) BlockKey(model string, id format.ID) format.Key {
	return ms.LayoutOf(model).BlockKey(ms.s, model, id)
}

// HasBlock reports whether a tier holds block id of model (BlockKey's),
// from the tiers' indexes (tiers.Stack.HasKey).
func (ms Models) HasBlock(model string, id format.ID) bool {
	return ms.s.stack.HasKey(ms.BlockKey(model, id))
}

// adoptLayouts runs at mount, after the models are registered: a model
// whose tiers hold raw blocks (an existing UCM data directory used as a
// tier) takes the ucm-posix layout when it has no record, and the shard
// widths of its files join its record.
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
				v.Layout = LayoutUCMPosix
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
