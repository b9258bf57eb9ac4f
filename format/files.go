package format

import (
	"crypto/sha256"
	"fmt"
	"strings"
)

// Files are the files of the files layout (docs/spec.md §2): any tree of
// names an engine makes under a model directory, each regular file raw
// (no header), named by its path relative to the model. A file's key
// carries that path in Name; its ID is the path's SHA-256 (FileID), so
// the tiers' indexes, which find files by id, take it like any other.
// The first byte of the id is the first byte of the SHA-256 of the file's
// directory (FileShard) instead: the indexes group files by that byte, so
// the files of one directory are listed from one of 256 groups, not from
// the whole model. The path is the key: the same bytes under two names
// are two files.

// File is the kind of a file of the files layout.
const File Kind = rawBase + MaxShardWidth + 1

// MaxFileName is the longest name of one path component (NAME_MAX).
const MaxFileName = 255

// MaxFilePath is the longest path of a file relative to its model, so
// that <tier>/<model>/<path> stays under PATH_MAX (4096) for a tier root
// of up to 1 KiB.
const MaxFilePath = 4096 - 1024 - MaxModelLen - 2

// FileID is the id of the file at rel (a path ValidateFilePath accepts).
func FileID(rel string) ID {
	sum := sha256.Sum256([]byte(rel))
	var id ID
	copy(id[:], sum[:IDLen])
	dir, _ := SplitFilePath(rel)
	id[0] = FileShard(dir)
	return id
}

// FileShard is the first byte of the id of every file in the directory
// dir of a files model ("" at its root).
func FileShard(dir string) byte {
	sum := sha256.Sum256([]byte(dir))
	return sum[0]
}

// FileKey is the key of the file at rel in model.
func FileKey(model, rel string) Key {
	return Key{Model: model, ID: FileID(rel), Kind: File, Name: rel}
}

// ValidateFilePath checks rel as a path in a files model: relative,
// slash-separated, clean (no empty, "." or ".." component), no NUL, each
// component 1..MaxFileName bytes, the whole at most MaxFilePath. Errors
// wrap ErrName.
func ValidateFilePath(rel string) error {
	if rel == "" || len(rel) > MaxFilePath {
		if rel != "" {
			return fmt.Errorf("%w: a path is at most %d bytes, got %d", ErrNameTooLong, MaxFilePath, len(rel))
		}
		return fmt.Errorf("%w: an empty path", ErrName)
	}
	if strings.IndexByte(rel, 0) >= 0 {
		return fmt.Errorf("%w: path %q holds a NUL byte", ErrName, rel)
	}
	for c := range strings.SplitSeq(rel, "/") {
		if err := ValidateFileName(c); err != nil {
			return fmt.Errorf("%w (in %q)", err, rel)
		}
	}
	return nil
}

// ValidateFileName checks one component of a path in a files model.
func ValidateFileName(name string) error {
	switch {
	case name == "", name == ".", name == "..":
		return fmt.Errorf("%w: %q is not a file name", ErrName, name)
	case len(name) > MaxFileName:
		return fmt.Errorf("%w: a name is at most %d bytes, got %d", ErrNameTooLong, MaxFileName, len(name))
	case strings.ContainsAny(name, "/\x00"):
		return fmt.Errorf("%w: %q holds '/' or NUL", ErrName, name)
	}
	return nil
}

// JoinFilePath is dir/name, or name when dir is "" (the model's root).
func JoinFilePath(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// SplitFilePath splits rel into its directory ("" at the model's root)
// and its base name, at its last slash. (A listing calls it for every
// file of a shard: strings.LastIndexByte, not path.Split's byte loop,
// which took 5% of a listing's time.)
func SplitFilePath(rel string) (dir, name string) {
	i := strings.LastIndexByte(rel, '/')
	if i < 0 {
		return "", rel
	}
	return rel[:i], rel[i+1:]
}
