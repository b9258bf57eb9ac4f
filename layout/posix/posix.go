package posix

import (
	"fmt"
	"strings"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/layout"
)

// Name is the layout's name.
const Name = "ucm-posix"

// DefaultShardWidth is the width a ucm-posix model's blocks are written
// under by a writer that names no shard (a GPU dump) while the model has
// no shard directory yet: UCM's default data_dir_shard_bytes.
const DefaultShardWidth = 3

// Layout is the ucm-posix layout.
type Layout struct{}

var _ layout.Layout = Layout{}

// Name is "ucm-posix".
func (Layout) Name() string { return Name }

// Owns reports whether k is a raw block's kind, of any width.
func (Layout) Owns(k format.Kind) bool { return k.Raw() }

// BlockKey is the raw block of the first of the model's shard widths that
// holds it (else of its first width, DefaultShardWidth when it has none).
func (Layout) BlockKey(ms layout.Models, model string, id format.ID) format.Key {
	widths := ms.ShardWidths(model)
	if len(widths) == 0 {
		return format.Key{Model: model, ID: id, Kind: format.RawKind(DefaultShardWidth)}
	}
	for _, w := range widths {
		if k := (format.Key{Model: model, ID: id, Kind: format.RawKind(w)}); ms.HasKey(k) {
			return k
		}
	}
	return format.Key{Model: model, ID: id, Kind: format.RawKind(widths[0])}
}

// Sidecar: a raw block has none.
func (Layout) Sidecar(format.Key) (format.Key, bool) { return format.Key{}, false }

// IsSidecar is false: every file is a block.
func (Layout) IsSidecar(format.Key) bool { return false }

// BlockOf is k.
func (Layout) BlockOf(k format.Key) format.Key { return k }

// ParseName parses a raw block's name, final or staging, in the shard
// directory dir.
func (Layout) ParseName(model, dir, name string) (format.Key, bool, error) {
	return layout.ParseShardName(dir, name, func(dir, name string) (format.Key, error) { return parse(model, dir, name) })
}

// ParseFinal parses the final name name in the shard dir.
func (Layout) ParseFinal(model, dir, name string) (format.Key, error) { return parse(model, dir, name) }

// parse parses the final name name in the shard dir.
func parse(model, dir, name string) (format.Key, error) {
	id, kind, err := format.ParseFileName(dir, name)
	if err != nil {
		return format.Key{}, err
	}
	if !kind.Raw() {
		return format.Key{}, fmt.Errorf("%w: %q: a ucm-posix model holds <id> files only", format.ErrName, name)
	}
	return format.Key{Model: model, ID: id, Kind: kind}, nil
}

// ParsePath parses <shard>/<id>.
func (Layout) ParsePath(model, rel string) (format.Key, error) {
	dir, name, ok := strings.Cut(rel, "/")
	if _, raw := format.ParseRawShard(dir); !ok || !raw {
		return format.Key{}, fmt.Errorf("%w: %q is not <shard>/<id>", format.ErrName, rel)
	}
	return parse(model, dir, name)
}

// Staging reports whether name is a staging name of a file of the
// shard dir (layout.ShardStaging).
func (Layout) Staging(dir, name string) bool { return layout.ShardStaging(dir, name) }

// Shards is the shard directories of every width model has: 16^width
// each, the one "data" directory for width 0.
func (Layout) Shards(ms layout.Models, model string) int {
	n := 0
	for _, w := range ms.ShardWidths(model) {
		n += 1 << (4 * w)
	}
	return n
}

// ShardRange is the id bytes the shard's ids start with: every one for
// "data", 16 for one hex character, one for two or more.
func (Layout) ShardRange(dir string) (lo, hi int) {
	lo, hi = 0, 256
	switch w, _ := format.ParseRawShard(dir); {
	case w == 1:
		b, _ := format.ParseShard(dir + "0")
		lo, hi = int(b), int(b)+16
	case w >= 2:
		b, _ := format.ParseShard(dir[:2])
		lo, hi = int(b), int(b)+1
	}
	return lo, hi
}

// InShard reports whether k is a raw block of dir's width whose id
// starts with dir (the group holds every width's, and for widths 3 and 4
// other shards' too).
func (Layout) InShard(k format.Key, dir string) bool {
	w, _ := format.ParseRawShard(dir)
	return k.Kind == format.RawKind(w) && (w <= 2 || strings.HasPrefix(k.ID.String(), dir))
}

// Replaces is false: a second publish of a name is a copy of its block.
func (Layout) Replaces() bool { return false }

// Headerless is true: a raw block is its payload.
func (Layout) Headerless() bool { return true }

// Dirs is MadeShards.
func (Layout) Dirs() layout.Dirs { return layout.MadeShards }

// Tree is false: the directories are shards of the widths the store
// made.
func (Layout) Tree() bool { return false }

// Kept is false: every block may be evicted.
func (Layout) Kept(format.Key) bool { return false }

// EngineHash is UCM's id's last 8 bytes, read big-endian.
func (Layout) EngineHash(k format.Key) (uint64, bool) { return layout.IDHash(k.ID), true }
