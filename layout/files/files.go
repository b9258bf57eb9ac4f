package files

import (
	"path"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/layout"
)

// Name is the layout's name.
const Name = "files"

// Layout is the files layout.
type Layout struct{}

var _ layout.Layout = Layout{}

// Name is "files".
func (Layout) Name() string { return Name }

// Owns reports whether k is a File's kind.
func (Layout) Owns(k format.Kind) bool { return k == format.File }

// BlockKey: a files model names its files by path, not by block id; an
// id names no file there.
func (Layout) BlockKey(_ layout.Models, model string, id format.ID) format.Key {
	return format.Key{Model: model, ID: id, Kind: format.File}
}

// Sidecar: a File has none.
func (Layout) Sidecar(format.Key) (format.Key, bool) { return format.Key{}, false }

// IsSidecar is false: every file is the engine's.
func (Layout) IsSidecar(format.Key) bool { return false }

// BlockOf is k.
func (Layout) BlockOf(k format.Key) format.Key { return k }

// ParseName is the File dir/name of model; a staging name names its own
// File (the name it publishes under is its rename's).
func (l Layout) ParseName(model, dir, name string) (format.Key, bool, error) {
	k, err := l.ParseFinal(model, dir, name)
	return k, err == nil && l.Staging(dir, name), err
}

// ParseFinal is the File dir/name of model.
func (Layout) ParseFinal(model, dir, name string) (format.Key, error) {
	if err := format.ValidateFileName(name); err != nil {
		return format.Key{}, err
	}
	return format.FileKey(model, format.JoinFilePath(dir, name)), nil
}

// ParsePath is the File rel of model.
func (Layout) ParsePath(model, rel string) (format.Key, error) {
	if err := format.ValidateFilePath(rel); err != nil {
		return format.Key{}, err
	}
	return format.FileKey(model, rel), nil
}

// Staging reports whether name is a temporary name (StagingName); dir
// does not matter.
func (Layout) Staging(_, name string) bool { return StagingName(name) }

// Shards is 0: the directories are the engine's.
func (Layout) Shards(layout.Models, string) int { return 0 }

// ShardRange is the one group of dir's files (format.FileShard).
func (Layout) ShardRange(dir string) (int, int) {
	b := int(format.FileShard(dir))
	return b, b + 1
}

// InShard reports whether k is a File of dir itself (the group holds
// other directories' files too).
func (Layout) InShard(k format.Key, dir string) bool {
	return k.Kind == format.File && k.ShardDir() == dir
}

// Replaces is true: a name is the engine's, written again with new
// bytes.
func (Layout) Replaces() bool { return true }

// Headerless is true: a File is its payload.
func (Layout) Headerless() bool { return true }

// Dirs is TreeDirs.
func (Layout) Dirs() layout.Dirs { return layout.TreeDirs }

// Tree is true: the directories are the engine's.
func (Layout) Tree() bool { return true }

// Kept is KeptFile.
func (Layout) Kept(k format.Key) bool { return KeptFile(k) }

// EngineHash is the digest the File's name holds, where its engine wrote
// it as "<hex digest>.bin" (vLLM's fs offloading tier and llm-d's fs
// backend: <hhh>/<hh>_g<group>/<sha256 hex>.bin): its last 8 bytes, read
// big-endian. ok is false for any other name: such a file is reported on
// .ucm/events only.
func (Layout) EngineHash(k format.Key) (uint64, bool) { return fileHash(path.Base(k.Name)) }
