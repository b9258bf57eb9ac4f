package format

import "fmt"

// ValidateBlock applies every rule of docs/spec.md §4 to the decoded header h of a
// block file named name.bin that is size bytes long, in the order listed in
// docs/format.md: size >= 64, num_layers and block_size >= 1, dtype
// known, no unknown flag bit, id equals name, payload_len (if stated) equals
// size - 64, the payload fits the shape (layers × T × block_size × heads ×
// head_dim × element size when heads and head_dim are stated, else a
// multiple of layers × T; no shape rule for an opaque block), and last,
// when FlagCRC is set, the payload's
// CRC-32C equals the header's. payloadCRC computes that CRC; it is called
// only when needed, and a nil payloadCRC skips the CRC rule. Rule failures
// wrap ErrFormat; an error of payloadCRC is returned wrapped as it is.
func ValidateBlock(h BlockHeader, name ID, size int64, payloadCRC func() (uint32, error)) error {
	if size < HeaderSize {
		return blockErr(RuleSize, "file is %d bytes, shorter than the %d-byte header", size, HeaderSize)
	}
	if err := h.checkFields(); err != nil {
		return err
	}
	if h.ID != name {
		return blockErr(RuleID, "header id %s differs from file name %s", h.ID, name)
	}
	payload := payloadOf(size)
	if h.PayloadLen != 0 && h.PayloadLen != payload {
		return blockErr(RulePayloadLen, "payload_len %d but the file has %d payload bytes", h.PayloadLen, payload)
	}
	switch {
	case h.Opaque():
		// No layout: the size is payload_len's, checked above.
	case h.NumKVHeads != 0 && h.HeadDim != 0:
		want, ok := h.ShapePayload()
		if !ok {
			return blockErr(RulePayloadSize, "shape %d×%d×%d×%d×%d×%d bytes overflows 64 bits",
				h.NumLayers, h.Tensors(), h.BlockSize, h.NumKVHeads, h.HeadDim, h.Dtype.Size())
		}
		if want != payload {
			return blockErr(RulePayloadSize, "shape layers %d × T %d × block_size %d × heads %d × head_dim %d × %d bytes (%s) = %d, but payload is %d bytes",
				h.NumLayers, h.Tensors(), h.BlockSize, h.NumKVHeads, h.HeadDim, h.Dtype.Size(), h.Dtype, want, payload)
		}
	case payload%(uint64(h.NumLayers)*uint64(h.Tensors())) != 0:
		return blockErr(RulePayloadSize, "payload of %d bytes is not a multiple of layers %d × T %d", payload, h.NumLayers, h.Tensors())
	}
	if h.HasCRC() && payloadCRC != nil {
		got, err := payloadCRC()
		if err != nil {
			return fmt.Errorf("block %s: computing payload CRC-32C: %w", name, err)
		}
		if got != h.PayloadCRC {
			return blockErr(RuleCRC, "payload CRC-32C is %08x, header says %08x", got, h.PayloadCRC)
		}
	}
	return nil
}
