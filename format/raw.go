package format

import (
	"fmt"
	"strings"
)

// Raw blocks are the files of the ucm-posix layout (docs/spec.md §2, UCM
// PosixStore's own names): <model>/<shard>/<id>, no extension, the raw
// payload with no header, where <shard> is the first W hex characters of
// the id (W = 1..4) or the single directory "data" (W = 0). A raw block
// has no rule but its name: any size, 0 included, since UCM takes a
// file's existence as the block; its CRC-32C covers the whole file. The width is part of the key's kind, so the same id
// under two widths names two files.

// MaxShardWidth is the widest shard directory of a raw block: 4 hex
// characters (65536 directories).
const MaxShardWidth = 4

// RawFormat names the raw block format in a FormatError.
const RawFormat = "raw"

// RawDataShard is the shard directory of width 0.
const RawDataShard = "data"

// rawBase is the Kind of a raw block of width 0; width w is rawBase+w.
const rawBase Kind = 2

// RawKind is the kind of a raw block whose shard directories are width
// hex characters wide (0: "data"). It panics outside 0..MaxShardWidth.
func RawKind(width int) Kind {
	if width < 0 || width > MaxShardWidth {
		panic(fmt.Sprintf("format: shard width %d outside 0..%d", width, MaxShardWidth))
	}
	return rawBase + Kind(width)
}

// Raw reports whether k is the kind of a raw block.
func (k Kind) Raw() bool { return k >= rawBase && k <= rawBase+MaxShardWidth }

// Width is the shard width of a raw kind (0 for the others).
func (k Kind) Width() int {
	if !k.Raw() {
		return 0
	}
	return int(k - rawBase)
}

// Valid reports whether k is a kind of file: a block, a sidecar, a raw
// block or a File.
func (k Kind) Valid() bool { return k == Block || k == Repr || k.Raw() || k == File }

// Headerless reports whether a file of kind k is all payload: a raw block
// or a File.
func (k Kind) Headerless() bool { return k.Raw() || k == File }

// HeaderLen is the length of the header before the payload of a file of
// kind k: 64 for a block or sidecar, 0 for a raw block or a File (its
// payload is the whole file).
func (k Kind) HeaderLen() int64 {
	if k.Headerless() {
		return 0
	}
	return HeaderSize
}

// RawShardName is the shard directory of id at width w: "data" for 0,
// else the first w hex characters of the id.
func RawShardName(id ID, w int) string {
	if w == 0 {
		return RawDataShard
	}
	return id.String()[:w]
}

// ParseRawShard parses the name of a raw shard directory: "data" (width
// 0) or 1..MaxShardWidth lowercase hex characters.
func ParseRawShard(s string) (width int, ok bool) {
	if s == RawDataShard {
		return 0, true
	}
	if len(s) < 1 || len(s) > MaxShardWidth {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return 0, false
		}
	}
	return len(s), true
}

// parseRawName parses a raw block's name, the 32 hex characters of its
// id, in the raw shard directory dir.
func parseRawName(dir, name string) (ID, Kind, error) {
	w, ok := ParseRawShard(dir)
	if !ok {
		return ID{}, 0, fmt.Errorf("%w: %q is neither <id>.bin nor <id>.repr", ErrName, name)
	}
	id, err := ParseID(name)
	if err != nil {
		return ID{}, 0, err
	}
	if w > 0 && !strings.HasPrefix(name, dir) {
		return ID{}, 0, fmt.Errorf("%w: %q does not belong in shard %q", ErrName, name, dir)
	}
	return id, RawKind(w), nil
}
