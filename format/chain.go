package format

import (
	"crypto/md5"
	"encoding/binary"
	"strconv"
)

// SeedPrefix is prepended to the meta string to form the chain's seed
// (docs/spec.md §3): parent_0 = MD5("UCMHASHSEED" || meta).
const SeedPrefix = "UCMHASHSEED"

// Meta builds the meta string "<model>:<world_size>:<dtype>:<rank>" that
// seeds the hash chain. model and dtype are the engine's own strings (for
// example "meta-llama/Llama-3.1-8B" and "bfloat16"), not the escaped model
// directory name.
func Meta(model string, worldSize int, dtype string, rank int) string {
	return model + ":" + strconv.Itoa(worldSize) + ":" + dtype + ":" + strconv.Itoa(rank)
}

// ChainSeed is parent_0 of the chain: MD5("UCMHASHSEED" || meta), with meta
// taken as its UTF-8 bytes.
func ChainSeed(meta string) ID {
	h := md5.New()
	h.Write([]byte(SeedPrefix))
	h.Write([]byte(meta))
	var id ID
	h.Sum(id[:0])
	return id
}

// NextID is one link of the chain: MD5(parent || tokens), every token
// encoded as a 4-byte little-endian uint32. tokens is one full block.
func NextID(parent ID, tokens []uint32) ID {
	buf := make([]byte, IDLen+4*len(tokens))
	copy(buf, parent[:])
	for i, t := range tokens {
		binary.LittleEndian.PutUint32(buf[IDLen+4*i:], t)
	}
	return md5.Sum(buf)
}

// Chain returns the ids of every full block of blockSize tokens in tokens,
// in order; a trailing partial block gets no id. It returns nil when
// blockSize < 1.
func Chain(meta string, blockSize int, tokens []uint32) []ID {
	if blockSize < 1 {
		return nil
	}
	h := NewHasher(ChainSeed(meta), blockSize)
	return h.Add(tokens...)
}

// Hasher computes the chain incrementally, for token streams that arrive in
// pieces of any length. The zero value is not usable; call NewHasher.
type Hasher struct {
	parent    ID
	blockSize int
	pending   []uint32
	keys      Keys   // extra keys, when hasKeys
	hasKeys   bool   // keys is not empty
	block     int    // index of the block being filled
	enc       []byte // scratch for the encoded keys of a block
}

// NewHasher starts a chain at parent (ChainSeed(meta) for a fresh request,
// or the id of the last block already hashed). blockSize must be >= 1; a
// smaller value is treated as 1.
func NewHasher(parent ID, blockSize int) *Hasher {
	if blockSize < 1 {
		blockSize = 1
	}
	return &Hasher{parent: parent, blockSize: blockSize, pending: make([]uint32, 0, blockSize)}
}

// NewHasherKeys is NewHasher for a chain with extra keys; the first block
// it completes is block 0 of the prompt (the one that takes the salt and
// the group). With empty keys it is NewHasher.
func NewHasherKeys(parent ID, blockSize int, keys Keys) *Hasher {
	h := NewHasher(parent, blockSize)
	if !keys.Empty() {
		keys.MM = keys.sortedMM()
		h.keys, h.hasKeys = keys, true
	}
	return h
}

// Add feeds tokens and returns the ids of the blocks they complete (none
// when no block was completed).
func (h *Hasher) Add(tokens ...uint32) []ID {
	var ids []ID
	for len(tokens) > 0 {
		n := min(h.blockSize-len(h.pending), len(tokens))
		h.pending = append(h.pending, tokens[:n]...)
		tokens = tokens[n:]
		if len(h.pending) == h.blockSize {
			parent := h.parent
			if h.hasKeys {
				h.enc = h.keys.AppendBlock(h.enc[:0], h.block, h.blockSize)
				parent = KeyedParent(parent, h.enc)
			}
			h.block++
			h.parent = NextID(parent, h.pending)
			h.pending = h.pending[:0]
			ids = append(ids, h.parent)
		}
	}
	return ids
}

// Parent is the id of the last completed block (the seed before the first).
func (h *Hasher) Parent() ID { return h.parent }

// Pending is the number of tokens of the current, still partial, block.
func (h *Hasher) Pending() int { return len(h.pending) }
