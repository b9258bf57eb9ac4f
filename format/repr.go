package format

import (
	"encoding/binary"
	"fmt"
)

// Byte offsets of the UCMR header fields (docs/spec.md §5, docs/format.md); magic,
// version and id share the UCMB offsets.
const (
	offReprKind       = 24
	offReprDtype      = 28
	offReprNumLayers  = 32
	offReprNumKVHeads = 36
	offReprRows       = 40
	offReprDim        = 44
	offReprCRC        = 48
	offReprFlags      = 52
	offReprParam      = 56
	offReprReserved   = 60
)

// ReprHeader is the decoded 64-byte UCMR header of a <id>.repr sidecar. Its
// data is [NumLayers][NumKVHeads][Rows][Dim] elements of Dtype.
type ReprHeader struct {
	ID         ID
	Kind       ReprKind
	Dtype      Dtype
	NumLayers  uint32
	NumKVHeads uint32
	Rows       uint32 // vectors per head
	Dim        uint32 // elements per vector
	PayloadCRC uint32 // CRC-32C of the data, meaningful when Flags&FlagCRC
	Flags      uint32
	Param      uint32 // ReprMerged: merge factor; ReprSignHash: hash bits
}

// Encode writes the 64-byte header into b[:64] (reserved bytes zero). It
// panics if len(b) < 64.
func (h ReprHeader) Encode(b []byte) {
	_ = b[HeaderSize-1]
	le := binary.LittleEndian
	copy(b[offMagic:], ReprMagic)
	le.PutUint32(b[offVersion:], FormatVersion)
	copy(b[offID:offID+IDLen], h.ID[:])
	le.PutUint32(b[offReprKind:], uint32(h.Kind))
	le.PutUint32(b[offReprDtype:], uint32(h.Dtype))
	le.PutUint32(b[offReprNumLayers:], h.NumLayers)
	le.PutUint32(b[offReprNumKVHeads:], h.NumKVHeads)
	le.PutUint32(b[offReprRows:], h.Rows)
	le.PutUint32(b[offReprDim:], h.Dim)
	le.PutUint32(b[offReprCRC:], h.PayloadCRC)
	le.PutUint32(b[offReprFlags:], h.Flags)
	le.PutUint32(b[offReprParam:], h.Param)
	le.PutUint32(b[offReprReserved:], 0)
}

// MarshalBinary returns the 64-byte encoding of the header.
func (h ReprHeader) MarshalBinary() ([]byte, error) {
	b := make([]byte, HeaderSize)
	h.Encode(b)
	return b, nil
}

// UnmarshalBinary decodes b with DecodeReprHeader.
func (h *ReprHeader) UnmarshalBinary(b []byte) error {
	d, err := DecodeReprHeader(b)
	if err != nil {
		return err
	}
	*h = d
	return nil
}

// DecodeReprHeader decodes the first 64 bytes of b. It is strict: magic,
// version, a known kind and dtype, no unknown flag bit, reserved bytes
// zero; any header it returns encodes back to the same 64 bytes. The
// shape rules and those that need the file are ValidateRepr's.
func DecodeReprHeader(b []byte) (ReprHeader, error) {
	if err := checkPrefix(b, ReprMagic, reprErr); err != nil {
		return ReprHeader{}, err
	}
	le := binary.LittleEndian
	var h ReprHeader
	copy(h.ID[:], b[offID:offID+IDLen])
	h.Kind = ReprKind(le.Uint32(b[offReprKind:]))
	h.Dtype = Dtype(le.Uint32(b[offReprDtype:]))
	h.NumLayers = le.Uint32(b[offReprNumLayers:])
	h.NumKVHeads = le.Uint32(b[offReprNumKVHeads:])
	h.Rows = le.Uint32(b[offReprRows:])
	h.Dim = le.Uint32(b[offReprDim:])
	h.PayloadCRC = le.Uint32(b[offReprCRC:])
	h.Flags = le.Uint32(b[offReprFlags:])
	h.Param = le.Uint32(b[offReprParam:])
	if r := le.Uint32(b[offReprReserved:]); r != 0 {
		return ReprHeader{}, reprErr(RuleReserved, "reserved bytes 60..63 are %#x, want 0", r)
	}
	switch {
	case !h.Kind.Valid():
		return ReprHeader{}, reprErr(RuleKind, "unknown kind %d", uint32(h.Kind))
	case !h.Dtype.Valid():
		return ReprHeader{}, reprErr(RuleDtype, "unknown dtype %d", uint32(h.Dtype))
	case h.Flags&^FlagCRC != 0:
		return ReprHeader{}, reprErr(RuleFlags, "unknown flag bits %#x", h.Flags&^FlagCRC)
	}
	return h, nil
}

// HasCRC reports whether the header's payload CRC is set (flags bit 0).
func (h ReprHeader) HasCRC() bool { return h.Flags&FlagCRC != 0 }

// PayloadSize is num_layers × num_kv_heads × rows × dim × element size; ok
// is false when the dtype is unknown or the product overflows 64 bits.
func (h ReprHeader) PayloadSize() (n uint64, ok bool) {
	if !h.Dtype.Valid() {
		return 0, false
	}
	return mulU64(uint64(h.NumLayers), uint64(h.NumKVHeads), uint64(h.Rows), uint64(h.Dim), uint64(h.Dtype.Size()))
}

// NewRepr returns a complete sidecar file: h with PayloadCRC and FlagCRC
// filled in from payload, followed by payload.
func NewRepr(h ReprHeader, payload []byte) []byte {
	h.PayloadCRC = CRC32C(payload)
	h.Flags |= FlagCRC
	b := make([]byte, HeaderSize+len(payload))
	h.Encode(b)
	copy(b[HeaderSize:], payload)
	return b
}

// String is a one-line summary of the header, for logs and tools.
func (h ReprHeader) String() string {
	return fmt.Sprintf("UCMR id=%s kind=%s dtype=%s layers=%d heads=%d rows=%d dim=%d crc=%08x flags=%#x param=%d",
		h.ID, h.Kind, h.Dtype, h.NumLayers, h.NumKVHeads, h.Rows, h.Dim, h.PayloadCRC, h.Flags, h.Param)
}
