package format

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
)

// HeaderSize is the size of both the UCMB block header and the UCMR
// sidecar header; the payload starts right after it.
const HeaderSize = 64

// FormatVersion is the version both headers carry at offset 4.
const FormatVersion = 1

// The magic numbers at offset 0 of a block file and of a sidecar file.
const (
	BlockMagic = "UCMB"
	ReprMagic  = "UCMR"
)

// The flag bits of the UCMB header (offset 52); a header with any other
// bit set is invalid.
const (
	// FlagCRC (bit 0) says the header's payload_crc32c is set.
	FlagCRC uint32 = 1 << 0
	// FlagOpaque (bit 1) marks a blob with no K/V layout (a Mamba state, a
	// window tail): it states no heads, head_dim nor tensors per layer,
	// its payload is checked for size and CRC only, and no sidecar is
	// derived from it or stored beside it.
	FlagOpaque uint32 = 1 << 1

	knownFlags = FlagCRC | FlagOpaque
)

// Byte offsets of the UCMB header fields (docs/spec.md §4, docs/format.md).
const (
	offMagic           = 0
	offVersion         = 4
	offID              = 8
	offNumLayers       = 24
	offBlockSize       = 28
	offDtype           = 32
	offNumKVHeads      = 36
	offHeadDim         = 40
	offTensorsPerLayer = 44
	offPayloadCRC      = 48
	offFlags           = 52
	offPayloadLen      = 56
)

// BlockHeader is the decoded 64-byte UCMB header of a <id>.bin file. Zero
// NumKVHeads, HeadDim or PayloadLen mean "not stated"; TensorsPerLayer 0
// means 2 (K and V).
type BlockHeader struct {
	ID              ID
	NumLayers       uint32
	BlockSize       uint32 // tokens per block
	Dtype           Dtype
	NumKVHeads      uint32
	HeadDim         uint32
	TensorsPerLayer uint32
	PayloadCRC      uint32 // CRC-32C of the payload, meaningful when Flags&FlagCRC
	Flags           uint32
	PayloadLen      uint64 // bytes after the header
}

// Encode writes the 64-byte header into b[:64]. It panics if len(b) < 64.
func (h BlockHeader) Encode(b []byte) {
	_ = b[HeaderSize-1]
	le := binary.LittleEndian
	copy(b[offMagic:], BlockMagic)
	le.PutUint32(b[offVersion:], FormatVersion)
	copy(b[offID:offID+IDLen], h.ID[:])
	le.PutUint32(b[offNumLayers:], h.NumLayers)
	le.PutUint32(b[offBlockSize:], h.BlockSize)
	le.PutUint32(b[offDtype:], uint32(h.Dtype))
	le.PutUint32(b[offNumKVHeads:], h.NumKVHeads)
	le.PutUint32(b[offHeadDim:], h.HeadDim)
	le.PutUint32(b[offTensorsPerLayer:], h.TensorsPerLayer)
	le.PutUint32(b[offPayloadCRC:], h.PayloadCRC)
	le.PutUint32(b[offFlags:], h.Flags)
	le.PutUint64(b[offPayloadLen:], h.PayloadLen)
}

// MarshalBinary returns the 64-byte encoding of the header.
func (h BlockHeader) MarshalBinary() ([]byte, error) {
	b := make([]byte, HeaderSize)
	h.Encode(b)
	return b, nil
}

// UnmarshalBinary decodes b with DecodeBlockHeader.
func (h *BlockHeader) UnmarshalBinary(b []byte) error {
	d, err := DecodeBlockHeader(b)
	if err != nil {
		return err
	}
	*h = d
	return nil
}

// DecodeBlockHeader decodes the first 64 bytes of b. It is strict: magic,
// version, a known dtype, num_layers and block_size >= 1, and no unknown
// flag bit; any header it returns encodes back to the same 64 bytes. The
// rules that need the file (size, name, CRC) are ValidateBlock's.
func DecodeBlockHeader(b []byte) (BlockHeader, error) {
	if err := checkPrefix(b, BlockMagic, blockErr); err != nil {
		return BlockHeader{}, err
	}
	le := binary.LittleEndian
	var h BlockHeader
	copy(h.ID[:], b[offID:offID+IDLen])
	h.NumLayers = le.Uint32(b[offNumLayers:])
	h.BlockSize = le.Uint32(b[offBlockSize:])
	h.Dtype = Dtype(le.Uint32(b[offDtype:]))
	h.NumKVHeads = le.Uint32(b[offNumKVHeads:])
	h.HeadDim = le.Uint32(b[offHeadDim:])
	h.TensorsPerLayer = le.Uint32(b[offTensorsPerLayer:])
	h.PayloadCRC = le.Uint32(b[offPayloadCRC:])
	h.Flags = le.Uint32(b[offFlags:])
	h.PayloadLen = le.Uint64(b[offPayloadLen:])
	if err := h.checkFields(); err != nil {
		return BlockHeader{}, err
	}
	return h, nil
}

// checkFields holds the rules that need nothing but the header.
func (h BlockHeader) checkFields() error {
	switch {
	case h.NumLayers < 1:
		return blockErr(RuleNumLayers, "num_layers is 0, want >= 1")
	case h.BlockSize < 1:
		return blockErr(RuleBlockSize, "block_size is 0, want >= 1")
	case !h.Dtype.Valid():
		return blockErr(RuleDtype, "unknown dtype %d", uint32(h.Dtype))
	case h.Flags&^knownFlags != 0:
		return blockErr(RuleFlags, "unknown flag bits %#x", h.Flags&^knownFlags)
	case h.Opaque() && (h.NumKVHeads != 0 || h.HeadDim != 0 || h.TensorsPerLayer != 0):
		return blockErr(RuleOpaque, "opaque block states heads %d, head_dim %d, T %d; want all 0",
			h.NumKVHeads, h.HeadDim, h.TensorsPerLayer)
	}
	return nil
}

// HasCRC reports whether the header's payload CRC is set (flags bit 0).
func (h BlockHeader) HasCRC() bool { return h.Flags&FlagCRC != 0 }

// Opaque reports whether the block is an opaque blob (flags bit 1): no
// K/V layout, no tensor offsets, no sidecar.
func (h BlockHeader) Opaque() bool { return h.Flags&FlagOpaque != 0 }

// Tensors is T, the number of tensors per layer: TensorsPerLayer, with 0
// meaning 2 (K and V).
func (h BlockHeader) Tensors() uint32 {
	if h.TensorsPerLayer == 0 {
		return 2
	}
	return h.TensorsPerLayer
}

// ShapePayload is the payload size the header's shape implies,
// num_layers × T × block_size × num_kv_heads × head_dim × element size.
// ok is false when heads or head_dim are not stated, the dtype is unknown,
// the block is opaque, or the product overflows 64 bits.
func (h BlockHeader) ShapePayload() (n uint64, ok bool) {
	if h.NumKVHeads == 0 || h.HeadDim == 0 || !h.Dtype.Valid() || h.Opaque() {
		return 0, false
	}
	return mulU64(uint64(h.NumLayers), uint64(h.Tensors()), uint64(h.BlockSize),
		uint64(h.NumKVHeads), uint64(h.HeadDim), uint64(h.Dtype.Size()))
}

// TensorBytes is S, the size in bytes of one tensor (one of K or V of one
// layer): block_size × num_kv_heads × head_dim × element size when heads
// and head_dim are stated, else payload_len / (num_layers × T) when
// payload_len is stated. It is 0 when neither is known, and for an opaque
// block, which has no tensors.
func (h BlockHeader) TensorBytes() int64 {
	if h.Opaque() {
		return 0
	}
	if h.NumKVHeads != 0 && h.HeadDim != 0 {
		n, ok := mulU64(uint64(h.BlockSize), uint64(h.NumKVHeads), uint64(h.HeadDim), uint64(h.Dtype.Size()))
		if !ok || n > math.MaxInt64 {
			return 0
		}
		return int64(n)
	}
	per := uint64(h.NumLayers) * uint64(h.Tensors())
	if h.PayloadLen == 0 || per == 0 || h.PayloadLen/per > math.MaxInt64 {
		return 0
	}
	return int64(h.PayloadLen / per)
}

// TensorOffset is the file offset of tensor t (0 = K, 1 = V) of layer l:
// 64 + (l × T + t) × S. It is -1 when l or t is out of range or S is not
// known (an opaque block has none).
func (h BlockHeader) TensorOffset(l, t int) int64 {
	s := h.TensorBytes()
	if s <= 0 || l < 0 || t < 0 || uint64(l) >= uint64(h.NumLayers) || uint64(t) >= uint64(h.Tensors()) {
		return -1
	}
	idx := uint64(l)*uint64(h.Tensors()) + uint64(t)
	off, ok := mulU64(idx, uint64(s))
	if !ok || off > math.MaxInt64-HeaderSize {
		return -1
	}
	return HeaderSize + int64(off)
}

// NewBlock returns a complete block file: h with PayloadLen, PayloadCRC and
// FlagCRC filled in from payload, followed by payload.
func NewBlock(h BlockHeader, payload []byte) []byte {
	h.PayloadLen = uint64(len(payload))
	h.PayloadCRC = CRC32C(payload)
	h.Flags |= FlagCRC
	b := make([]byte, HeaderSize+len(payload))
	h.Encode(b)
	copy(b[HeaderSize:], payload)
	return b
}

// mulU64 multiplies xs; ok is false on overflow.
func mulU64(xs ...uint64) (uint64, bool) {
	p := uint64(1)
	for _, x := range xs {
		hi, lo := bits.Mul64(p, x)
		if hi != 0 {
			return 0, false
		}
		p = lo
	}
	return p, true
}

// payloadOf is the payload size of a file of size bytes (size >= 64).
func payloadOf(size int64) uint64 { return uint64(size - HeaderSize) }

// String is a one-line summary of the header, for logs and tools.
func (h BlockHeader) String() string {
	return fmt.Sprintf("UCMB id=%s layers=%d block_size=%d dtype=%s heads=%d head_dim=%d T=%d crc=%08x flags=%#x payload_len=%d",
		h.ID, h.NumLayers, h.BlockSize, h.Dtype, h.NumKVHeads, h.HeadDim, h.Tensors(), h.PayloadCRC, h.Flags, h.PayloadLen)
}

// checkPrefix checks what both headers share: at least 64 bytes, the
// magic, and the format version. fail builds the error of the header kind.
func checkPrefix(b []byte, magic string, fail func(Rule, string, ...any) error) error {
	if len(b) < HeaderSize {
		return fail(RuleSize, "header needs %d bytes, have %d", HeaderSize, len(b))
	}
	if string(b[offMagic:offMagic+4]) != magic {
		return fail(RuleMagic, "magic is %q, want %q", b[offMagic:offMagic+4], magic)
	}
	if v := binary.LittleEndian.Uint32(b[offVersion:]); v != FormatVersion {
		return fail(RuleVersion, "version is %d, want %d", v, FormatVersion)
	}
	return nil
}
