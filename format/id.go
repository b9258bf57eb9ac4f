package format

import (
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"strings"
)

// IDLen is the length in bytes of a block id (an MD5 digest).
const IDLen = 16

// ID is a block id: the 16-byte MD5 value of the hash chain (docs/spec.md §3).
type ID [IDLen]byte

// ErrName reports a name (model, id, file) that breaks the rules of docs/spec.md §2.
var ErrName = errors.New("invalid name")

// ErrNameTooLong is an ErrName for a name or path past its length limit
// (ENAMETOOLONG at the FUSE boundary, as a local disk answers).
var ErrNameTooLong = fmt.Errorf("%w: too long", ErrName)

// ParseID parses 32 lowercase hex characters.
func ParseID(s string) (ID, error) {
	var id ID
	if len(s) != 2*IDLen {
		return id, fmt.Errorf("%w: block id %q is not 32 hex characters", ErrName, s)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return id, fmt.Errorf("%w: block id %q is not lowercase hex", ErrName, s)
		}
	}
	if _, err := hex.Decode(id[:], []byte(s)); err != nil {
		return id, fmt.Errorf("%w: block id %q: %v", ErrName, s, err)
	}
	return id, nil
}

// String formats the id as 32 lowercase hex characters.
func (id ID) String() string { return hex.EncodeToString(id[:]) }

// Shard is the two-hex-digit shard directory of the id (<hh> = <id>[0:2]).
func (id ID) Shard() string { return ShardName(id[0]) }

// ShardName formats shard number b (0..255) as its directory name "00".."ff".
func ShardName(b byte) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[b>>4], digits[b&15]})
}

// ParseShard parses a shard directory name "00".."ff".
func ParseShard(s string) (byte, bool) {
	if len(s) != 2 {
		return 0, false
	}
	var b [1]byte
	for i := 0; i < 2; i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return 0, false
		}
	}
	if _, err := hex.Decode(b[:], []byte(s)); err != nil {
		return 0, false
	}
	return b[0], true
}

// MaxModelLen is the longest allowed model directory name.
const MaxModelLen = 200

// ValidateModel checks a model directory name: bytes [A-Za-z0-9._-],
// 1..200 long, not starting with '.'.
func ValidateModel(name string) error {
	if len(name) == 0 || len(name) > MaxModelLen {
		return fmt.Errorf("%w: model name must be 1..%d bytes, got %d", ErrName, MaxModelLen, len(name))
	}
	if name[0] == '.' {
		return fmt.Errorf("%w: model name %q starts with '.'", ErrName, name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("%w: model name %q has byte %q outside [A-Za-z0-9._-]", ErrName, name, c)
		}
	}
	return nil
}

// EscapeModel turns an engine's model name into a model directory name by
// replacing every "/" with "--" (meta-llama/Llama-3.1-8B becomes
// meta-llama--Llama-3.1-8B), and validates the result.
func EscapeModel(engineName string) (string, error) {
	name := strings.ReplaceAll(engineName, "/", "--")
	if err := ValidateModel(name); err != nil {
		return "", err
	}
	return name, nil
}

// UnescapeModel is the inverse of EscapeModel: every "--" becomes "/".
// Names whose engine form contained "--" do not round-trip; docs/spec.md §2 accepts
// that, since the directory name, not the engine name, is the key.
func UnescapeModel(dirName string) string { return strings.ReplaceAll(dirName, "--", "/") }

// Kind tells a block file from its sidecar.
type Kind uint8

const (
	// Block is a <id>.bin file: UCMB header and KV payload.
	Block Kind = iota
	// Repr is a <id>.repr sidecar: UCMR header and block representations.
	Repr
)

// Ext is the file-name extension of the kind, with its dot ("" for a raw
// block, raw.go, and a File, files.go).
func (k Kind) Ext() string {
	switch {
	case k == Repr:
		return ".repr"
	case k.Raw(), k == File:
		return ""
	}
	return ".bin"
}

// Key names one stored file: a block or the sidecar of a block, in a model.
type Key struct {
	Model string
	ID    ID
	Kind  Kind
	// Name is the file's path relative to its model for the kind File
	// (files.go; ID is then FileID(Name)), "" for the others, whose
	// names follow from ID and Kind.
	Name string
}

// FileName is the key's base name, "<id>.bin", "<id>.repr" or, for a raw
// block, "<id>"; for a File, the last component of its path.
func (k Key) FileName() string {
	if k.Kind == File {
		_, name := SplitFilePath(k.Name)
		return name
	}
	return k.ID.String() + k.Kind.Ext()
}

// ShardDir is the name of the key's shard directory: <hh>, or for a raw
// block the shard of its width (RawShardName); for a File, the path of
// its directory relative to the model ("" at the model's root).
func (k Key) ShardDir() string {
	switch {
	case k.Kind == File:
		dir, _ := SplitFilePath(k.Name)
		return dir
	case k.Kind.Raw():
		return RawShardName(k.ID, k.Kind.Width())
	}
	return k.ID.Shard()
}

// Path is the key's path relative to a mount or tier root:
// <model>/<hh>/<id>.bin (or .repr), <model>/<shard>/<id> for a raw block,
// <model>/<name> for a File.
func (k Key) Path() string {
	if k.Kind == File {
		return k.Model + "/" + k.Name
	}
	return k.Model + "/" + k.ShardDir() + "/" + k.FileName()
}

// String is the key's path, for logs.
func (k Key) String() string { return k.Path() }

// ParseFileName parses a file name under a shard directory ("<id>.bin" or
// "<id>.repr") and checks it belongs to shard hh when hh is not empty. In
// a raw shard directory hh (ParseRawShard), a name of 32 hex characters
// alone is a raw block of hh's width.
func ParseFileName(hh, name string) (ID, Kind, error) {
	var kind Kind
	var base string
	switch {
	case hh != "" && len(name) == 2*IDLen:
		return parseRawName(hh, name)
	case strings.HasSuffix(name, ".bin"):
		kind, base = Block, strings.TrimSuffix(name, ".bin")
	case strings.HasSuffix(name, ".repr"):
		kind, base = Repr, strings.TrimSuffix(name, ".repr")
	default:
		return ID{}, 0, fmt.Errorf("%w: %q is neither <id>.bin nor <id>.repr", ErrName, name)
	}
	id, err := ParseID(base)
	if err != nil {
		return ID{}, 0, err
	}
	if hh != "" && id.Shard() != hh {
		return ID{}, 0, fmt.Errorf("%w: %q does not belong in shard %q", ErrName, name, hh)
	}
	return id, kind, nil
}

// ParsePath parses a relative path <model>/<hh>/<id>.bin (or .repr), or
// <model>/<shard>/<id> of a raw block.
func ParsePath(p string) (Key, error) {
	p = path.Clean(p)
	parts := strings.Split(p, "/")
	if len(parts) != 3 {
		return Key{}, fmt.Errorf("%w: %q is not <model>/<hh>/<id>.bin", ErrName, p)
	}
	if err := ValidateModel(parts[0]); err != nil {
		return Key{}, err
	}
	_, hex2 := ParseShard(parts[1])
	if _, raw := ParseRawShard(parts[1]); !hex2 && !raw {
		return Key{}, fmt.Errorf("%w: %q is not a shard directory 00..ff, data or 1..4 hex characters", ErrName, parts[1])
	}
	id, kind, err := ParseFileName(parts[1], parts[2])
	if err != nil {
		return Key{}, err
	}
	return Key{Model: parts[0], ID: id, Kind: kind}, nil
}
