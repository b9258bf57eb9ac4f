package format

import (
	"cmp"
	"crypto/md5"
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// KeysPrefix starts the input of a keyed parent (docs/format.md §2.1):
// MD5("UCMHASHKEYS" || parent || the block's encoded keys).
const KeysPrefix = "UCMHASHKEYS"

// The tags of the extra keys, in the order a block's keys are encoded.
const (
	TagSalt   byte = 1 // Keys.Salt, first block only
	TagLoRA   byte = 2 // Keys.LoRA, every block
	TagMM     byte = 3 // one Keys.MM item, in the block holding its offset
	TagEmbeds byte = 4 // Keys.Embeds[i], block i
	TagGroup  byte = 5 // Keys.Group, first block only
)

// MMKey is a multimodal input of a prompt: the engine's content hash of
// the input and the offset, in tokens from the prompt's start, of its
// first placeholder token. It is written "hash@offset".
type MMKey struct {
	Hash   string
	Offset uint64
}

// String is the key's "hash@offset" form, the bytes the chain hashes.
func (m MMKey) String() string { return m.Hash + "@" + strconv.FormatUint(m.Offset, 10) }

// ParseMMKey parses "hash@offset": a non-empty hash (the part before the
// last "@") and a decimal offset.
func ParseMMKey(s string) (MMKey, error) {
	i := strings.LastIndexByte(s, '@')
	if i <= 0 {
		return MMKey{}, fmt.Errorf("multimodal key %q is not hash@offset", s)
	}
	off, err := strconv.ParseUint(s[i+1:], 10, 64)
	if err != nil {
		return MMKey{}, fmt.Errorf("multimodal key %q: offset is not a decimal integer", s)
	}
	return MMKey{Hash: s[:i], Offset: off}, nil
}

// Keys are the extra keys of a prompt (docs/format.md §2.1): what, beside
// its tokens, decides whether two prompts may share KV blocks. The zero
// value has none, and a chain without keys is the plain chain.
type Keys struct {
	// Salt is the tenant's cache salt; it enters the first block, so every
	// id of a salted prompt differs. "" is no salt.
	Salt string
	// LoRA names the adapter the prompt runs with; it enters every block.
	LoRA string
	// MM are the prompt's multimodal inputs; each enters the block that
	// holds its offset.
	MM []MMKey
	// Embeds[i] is the engine's hash of block i's prompt embeddings ("" or
	// missing: none).
	Embeds []string
	// Group is the KV-cache group the chain is for, when HasGroup; it
	// enters the first block, so every group has its own chain.
	Group    int
	HasGroup bool
}

// Empty reports whether k has no key at all.
func (k Keys) Empty() bool {
	return k.Salt == "" && k.LoRA == "" && len(k.MM) == 0 && len(k.Embeds) == 0 && !k.HasGroup
}

// AppendBlock appends the encoding of the keys of block i (blockSize
// tokens per block) to dst: every key as tag byte, 4-byte little-endian
// length, value bytes, in tag order (multimodal keys by offset, then
// hash). Nothing is appended when the block has no key.
func (k Keys) AppendBlock(dst []byte, i, blockSize int) []byte {
	put := func(tag byte, v string) {
		dst = append(dst, tag)
		dst = binary.LittleEndian.AppendUint32(dst, uint32(len(v)))
		dst = append(dst, v...)
	}
	if i == 0 && k.Salt != "" {
		put(TagSalt, k.Salt)
	}
	if k.LoRA != "" {
		put(TagLoRA, k.LoRA)
	}
	lo, hi := uint64(i)*uint64(blockSize), uint64(i+1)*uint64(blockSize)
	for _, m := range k.sortedMM() {
		if m.Offset >= lo && m.Offset < hi {
			put(TagMM, m.String())
		}
	}
	if i < len(k.Embeds) && k.Embeds[i] != "" {
		put(TagEmbeds, k.Embeds[i])
	}
	if i == 0 && k.HasGroup {
		put(TagGroup, strconv.Itoa(k.Group))
	}
	return dst
}

// sortedMM is MM ordered by offset, then hash.
func (k Keys) sortedMM() []MMKey {
	if slices.IsSortedFunc(k.MM, cmpMM) {
		return k.MM
	}
	return slices.SortedFunc(slices.Values(k.MM), cmpMM)
}

func cmpMM(a, b MMKey) int {
	return cmp.Or(cmp.Compare(a.Offset, b.Offset), strings.Compare(a.Hash, b.Hash))
}

// KeyedParent is the parent a block with encoded keys enc is hashed
// under: parent itself when enc is empty, else
// MD5("UCMHASHKEYS" || parent || enc).
func KeyedParent(parent ID, enc []byte) ID {
	if len(enc) == 0 {
		return parent
	}
	h := md5.New()
	h.Write([]byte(KeysPrefix))
	h.Write(parent[:])
	h.Write(enc)
	var id ID
	h.Sum(id[:0])
	return id
}

// ChainKeys is Chain with extra keys: id_i = MD5(KeyedParent(parent_i,
// keys of block i) || block i). With no keys it equals Chain.
func ChainKeys(meta string, blockSize int, tokens []uint32, keys Keys) []ID {
	if blockSize < 1 {
		return nil
	}
	return NewHasherKeys(ChainSeed(meta), blockSize, keys).Add(tokens...)
}
