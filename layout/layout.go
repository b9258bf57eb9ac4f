package layout

import (
	"encoding/binary"

	"github.com/ucmfs/ucmfs/format"
)

// Models is what a layout asks of the models it names a block for: the
// shard widths a model's record holds and whether a tier holds a key.
type Models interface {
	// ShardWidths are the widths of model's shard directories, sorted
	// (a ucm-posix model's; none for the others).
	ShardWidths(model string) []int
	// HasKey reports whether a tier holds k.
	HasKey(k format.Key) bool
}

// Dirs is the shape of a model directory's directories: what a front end
// shows under the model, one node type per shape.
type Dirs int

const (
	// HexShards: the 256 shard directories 00..ff, always there.
	HexShards Dirs = iota
	// MadeShards: shard directories the store makes at a mkdir of one,
	// of the widths the model's record holds (Models.ShardWidths).
	MadeShards
	// TreeDirs: any tree of directories the engine makes (Layout.Tree).
	TreeDirs
)

// Layout is the rules of one layout of a model directory: what its names
// are and what they parse to, what publishing under a name does, what a
// file holds, what a directory is, which hash a router knows a file by.
// Every caller asks the model's Layout (registry.ByName of its setting,
// or registry.Of a key) instead of testing a layout's name or a key's
// kind.
type Layout interface {
	// Name is the layout's name, the value of user.ucm.layout.
	Name() string
	// Owns reports whether a key of kind k is one of the layout's files
	// (each kind belongs to one layout).
	Owns(k format.Kind) bool

	// BlockKey is the key that block id of model m names: the file .ucm/
	// requests and GPU dumps name by id.
	BlockKey(ms Models, model string, id format.ID) format.Key
	// Sidecar is the sidecar that describes block k (a ucmb block's
	// .repr); ok is false where the layout has none.
	Sidecar(k format.Key) (side format.Key, ok bool)
	// IsSidecar reports whether k is a sidecar, not a block: it is
	// checked as one when published, not journaled, and BlockOf names the
	// block it describes.
	IsSidecar(k format.Key) bool
	// BlockOf is the block sidecar k describes, k itself for a block.
	BlockOf(k format.Key) format.Key

	// ParseName parses name in the directory dir ("" the model's root)
	// of model: the key it names and whether it is a staging name (a
	// writer's temporary name before its rename to the final one, then
	// the key is the final name's where the layout can tell it, else the
	// staging name's own). Errors wrap format.ErrName.
	ParseName(model, dir, name string) (k format.Key, staging bool, err error)
	// ParseFinal parses name in the directory dir as a final name (no
	// staging one).
	ParseFinal(model, dir, name string) (format.Key, error)
	// ParsePath parses a path relative to a model directory: what a walk
	// of a tier's model directory sees as one of the layout's files.
	ParsePath(model, rel string) (format.Key, error)
	// Staging reports whether name, in the directory dir, is a staging
	// name (ParseName's second answer, without parsing the final name).
	Staging(dir, name string) bool

	// Shards is how many shard directories model has (its directory's
	// link count less 2): 0 for a tree of Files, whose directories are
	// the engine's.
	Shards(ms Models, model string) int
	// ShardRange is the first bytes of the ids of the files of directory
	// dir, lo to hi exclusive: the groups of the tiers' indexes (which
	// group files by their id's first byte) a listing of dir reads.
	ShardRange(dir string) (lo, hi int)
	// InShard reports whether k, found in one of ShardRange(dir)'s
	// groups, is a file of directory dir.
	InShard(k format.Key, dir string) bool

	// Replaces reports whether a file published under a name that is
	// published already replaces it (files: a name is the engine's,
	// written again with new bytes; the replaced file's readers keep its
	// bytes, the name gets a new version) or is dropped as a second copy
	// of the same block (ucmb, ucm-posix: a name is the block's content).
	Replaces() bool
	// Headerless reports whether the model's files are all payload, with
	// no UCMB header.
	Headerless() bool
	// Dirs is the shape of the model's directories.
	Dirs() Dirs
	// Tree reports whether the model is a tree of directories its engine
	// makes (mkdir, rmdir, a rename of a directory moves each file
	// beneath it, a directory may be pinned), a key naming its file by
	// path (Key.Name); else its directories are the layout's shards, made
	// by the layout's rules.
	Tree() bool
	// Kept reports whether k is one of an engine's own files that
	// eviction never drops (a config, a lock), not a KV block.
	Kept(k format.Key) bool
	// EngineHash is the block hash a router of the engine knows k by; ok
	// is false where none can be known (a sidecar, a file whose name holds
	// no digest).
	EngineHash(k format.Key) (h uint64, ok bool)
}

// ParseShardName is a ParseName of a layout of shard directories, whose
// staging names are format's (<final>.tmp, rsync's .<final>.XXXXXX):
// parse parses a final name of the shard dir.
func ParseShardName(dir, name string, parse func(dir, name string) (format.Key, error)) (format.Key, bool, error) {
	if final, ok := format.ParseStagingName(dir, name); ok {
		k, err := parse(dir, final)
		return k, true, err
	}
	k, err := parse(dir, name)
	return k, false, err
}

// ShardStaging is the Staging of a layout of shard directories: format's
// staging names of a final name of the shard dir.
func ShardStaging(dir, name string) bool {
	_, ok := format.ParseStagingName(dir, name)
	return ok
}

// IDHash is the last 8 bytes of id, read big-endian: the hash a router
// knows a block named by UCM's id by (vLLM publishes block hashes so by
// default).
func IDHash(id format.ID) uint64 { return binary.BigEndian.Uint64(id[len(id)-8:]) }
