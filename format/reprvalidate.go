package format

import "fmt"

// ValidateRepr applies every sidecar rule (docs/spec.md §5 and docs/format.md) to
// the decoded header h of a sidecar named name.repr that is size bytes
// long, in this order: size >= 64; kind and dtype known; no unknown flag
// bit; num_layers, num_kv_heads, rows, dim >= 1; the kind's own rules
// (mean/max: rows 1, param 0; merged: param >= 1; sign-hash: dtype uint8,
// param = hash_bits a positive multiple of 8, dim = hash_bits / 8); id
// equals name; size = 64 + layers × heads × rows × dim × element size; and
// last, when FlagCRC is set, the data's CRC-32C equals the header's. A nil
// payloadCRC skips the CRC rule. Rule failures wrap ErrFormat.
func ValidateRepr(h ReprHeader, name ID, size int64, payloadCRC func() (uint32, error)) error {
	if size < HeaderSize {
		return reprErr(RuleSize, "file is %d bytes, shorter than the %d-byte header", size, HeaderSize)
	}
	if err := h.checkFields(); err != nil {
		return err
	}
	if h.ID != name {
		return reprErr(RuleID, "header id %s differs from file name %s", h.ID, name)
	}
	want, ok := h.PayloadSize()
	if !ok {
		return reprErr(RulePayloadSize, "shape %d×%d×%d×%d×%d bytes overflows 64 bits",
			h.NumLayers, h.NumKVHeads, h.Rows, h.Dim, h.Dtype.Size())
	}
	if payload := payloadOf(size); want != payload {
		return reprErr(RulePayloadSize, "layers %d × heads %d × rows %d × dim %d × %d bytes (%s) = %d, but payload is %d bytes",
			h.NumLayers, h.NumKVHeads, h.Rows, h.Dim, h.Dtype.Size(), h.Dtype, want, payload)
	}
	if h.HasCRC() && payloadCRC != nil {
		got, err := payloadCRC()
		if err != nil {
			return fmt.Errorf("sidecar %s: computing payload CRC-32C: %w", name, err)
		}
		if got != h.PayloadCRC {
			return reprErr(RuleCRC, "payload CRC-32C is %08x, header says %08x", got, h.PayloadCRC)
		}
	}
	return nil
}

// checkFields holds the sidecar rules that need nothing but the header.
func (h ReprHeader) checkFields() error {
	switch {
	case !h.Kind.Valid():
		return reprErr(RuleKind, "unknown kind %d", uint32(h.Kind))
	case !h.Dtype.Valid():
		return reprErr(RuleDtype, "unknown dtype %d", uint32(h.Dtype))
	case h.Flags&^FlagCRC != 0:
		return reprErr(RuleFlags, "unknown flag bits %#x", h.Flags&^FlagCRC)
	case h.NumLayers < 1:
		return reprErr(RuleNumLayers, "num_layers is 0, want >= 1")
	case h.NumKVHeads < 1:
		return reprErr(RuleNumKVHeads, "num_kv_heads is 0, want >= 1")
	case h.Rows < 1:
		return reprErr(RuleRows, "rows is 0, want >= 1")
	case h.Dim < 1:
		return reprErr(RuleDim, "dim is 0, want >= 1")
	}
	switch h.Kind {
	case ReprMean, ReprMax:
		if h.Rows != 1 {
			return reprErr(RuleRows, "kind %s has rows %d, want 1", h.Kind, h.Rows)
		}
		if h.Param != 0 {
			return reprErr(RuleParam, "kind %s has param %d, want 0", h.Kind, h.Param)
		}
	case ReprMerged:
		if h.Param < 1 {
			return reprErr(RuleParam, "kind %s needs its merge factor in param, got 0", h.Kind)
		}
	case ReprSignHash:
		if h.Dtype != Uint8 {
			return reprErr(RuleDtype, "kind %s has dtype %s, want uint8", h.Kind, h.Dtype)
		}
		if h.Param == 0 || h.Param%8 != 0 {
			return reprErr(RuleParam, "kind %s needs hash_bits, a positive multiple of 8, in param, got %d", h.Kind, h.Param)
		}
		if h.Dim != h.Param/8 {
			return reprErr(RuleDim, "kind %s has dim %d, want hash_bits / 8 = %d", h.Kind, h.Dim, h.Param/8)
		}
	}
	return nil
}

// CheckReprForBlock checks a valid sidecar against its valid block: same
// id and num_layers; num_kv_heads equal to the block's when the block
// states it; for kinds mean, max and merged, dim equal to the block's
// head_dim when stated; for kind merged, rows = block_size / merge, rounded
// down or up. An opaque block has no sidecar: any is refused (RuleOpaque).
func CheckReprForBlock(r ReprHeader, b BlockHeader) error {
	switch {
	case r.ID != b.ID:
		return reprErr(RuleID, "sidecar id %s differs from block id %s", r.ID, b.ID)
	case b.Opaque():
		return reprErr(RuleOpaque, "block %s is opaque: it has no keys to represent", b.ID)
	case r.NumLayers != b.NumLayers:
		return reprErr(RuleNumLayers, "sidecar has %d layers, its block %d", r.NumLayers, b.NumLayers)
	case b.NumKVHeads != 0 && r.NumKVHeads != b.NumKVHeads:
		return reprErr(RuleNumKVHeads, "sidecar has %d heads, its block %d", r.NumKVHeads, b.NumKVHeads)
	case r.Kind != ReprSignHash && b.HeadDim != 0 && r.Dim != b.HeadDim:
		return reprErr(RuleDim, "sidecar of kind %s has dim %d, its block head_dim %d", r.Kind, r.Dim, b.HeadDim)
	}
	if r.Kind == ReprMerged && r.Param >= 1 {
		bs, m := uint64(b.BlockSize), uint64(r.Param)
		lo, hi := bs/m, (bs+m-1)/m
		if rows := uint64(r.Rows); rows != lo && rows != hi {
			return reprErr(RuleRows, "merged sidecar has %d rows, want block_size %d / merge %d = %d", r.Rows, b.BlockSize, r.Param, hi)
		}
	}
	return nil
}
