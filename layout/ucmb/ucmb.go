package ucmb

import (
	"fmt"
	"strings"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/layout"
)

// Name is the layout's name.
const Name = "ucmb"

// Layout is the ucmb layout.
type Layout struct{}

var _ layout.Layout = Layout{}

// Name is "ucmb".
func (Layout) Name() string { return Name }

// Owns reports whether k is a block's or a sidecar's kind.
func (Layout) Owns(k format.Kind) bool { return k == format.Block || k == format.Repr }

// BlockKey is <id>.bin of model.
func (Layout) BlockKey(_ layout.Models, model string, id format.ID) format.Key {
	return format.Key{Model: model, ID: id, Kind: format.Block}
}

// Sidecar is the <id>.repr of block k.
func (Layout) Sidecar(k format.Key) (format.Key, bool) {
	if k.Kind != format.Block {
		return format.Key{}, false
	}
	return format.Key{Model: k.Model, ID: k.ID, Kind: format.Repr}, true
}

// IsSidecar reports whether k is a .repr.
func (Layout) IsSidecar(k format.Key) bool { return k.Kind == format.Repr }

// BlockOf is the block of sidecar k, k itself otherwise.
func (Layout) BlockOf(k format.Key) format.Key {
	if k.Kind == format.Repr {
		k.Kind = format.Block
	}
	return k
}

// ParseName parses a block or sidecar name, final or staging, in the shard
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
	if kind.Raw() {
		return format.Key{}, fmt.Errorf("%w: %q is neither <id>.bin nor <id>.repr", format.ErrName, name)
	}
	return format.Key{Model: model, ID: id, Kind: kind}, nil
}

// ParsePath parses <hh>/<id>.bin or <hh>/<id>.repr.
func (Layout) ParsePath(model, rel string) (format.Key, error) {
	dir, name, ok := strings.Cut(rel, "/")
	if _, hex2 := format.ParseShard(dir); !ok || !hex2 {
		return format.Key{}, fmt.Errorf("%w: %q is not <hh>/<id>.bin", format.ErrName, rel)
	}
	return parse(model, dir, name)
}

// Staging reports whether name is a staging name of a file of the
// shard dir (layout.ShardStaging).
func (Layout) Staging(dir, name string) bool { return layout.ShardStaging(dir, name) }

// Shards is the 256 shards 00..ff.
func (Layout) Shards(layout.Models, string) int { return 256 }

// ShardRange is the shard's own number.
func (Layout) ShardRange(dir string) (int, int) {
	b, _ := format.ParseShard(dir)
	return int(b), int(b) + 1
}

// InShard reports whether k is a block or sidecar (the files of the
// group are the shard's).
func (l Layout) InShard(k format.Key, _ string) bool { return l.Owns(k.Kind) }

// Replaces is false: a second publish of a name is a copy of its block.
func (Layout) Replaces() bool { return false }

// Headerless is false: a block has its UCMB header.
func (Layout) Headerless() bool { return false }

// Dirs is HexShards.
func (Layout) Dirs() layout.Dirs { return layout.HexShards }

// Tree is false: the directories are the 256 shards.
func (Layout) Tree() bool { return false }

// Kept is false: every block may be evicted.
func (Layout) Kept(format.Key) bool { return false }

// EngineHash is UCM's id's last 8 bytes, read big-endian, as vLLM
// publishes block hashes by default; a sidecar has none.
func (Layout) EngineHash(k format.Key) (uint64, bool) {
	if k.Kind != format.Block {
		return 0, false
	}
	return layout.IDHash(k.ID), true
}
