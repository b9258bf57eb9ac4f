package sparse

import (
	"fmt"
	"math"

	"github.com/ucmfs/ucmfs/format"
)

// Default params, used when a caller passes param 0 for the kinds that
// have one.
const (
	// DefaultMerge is the merge factor of kind 2: 4 tokens per row, so a
	// 16-token block has 4 rows per head.
	DefaultMerge uint32 = 4
	// DefaultHashBits is the code length of kind 3: 128 bits, 16 bytes
	// per layer and head.
	DefaultHashBits uint32 = 128
)

// ResolveParam returns the param a derivation of kind uses for the given
// one: 0 for mean and max (any other value is an error), param or its
// default when 0 for merged and sign-hash. A sign-hash param must be a
// multiple of 8 up to MaxHashBits.
func ResolveParam(kind format.ReprKind, param uint32) (uint32, error) {
	switch kind {
	case format.ReprMean, format.ReprMax:
		if param != 0 {
			return 0, fmt.Errorf("%w: kind %s takes no param, got %d", ErrArgument, kind, param)
		}
		return 0, nil
	case format.ReprMerged:
		if param == 0 {
			return DefaultMerge, nil
		}
		return param, nil
	case format.ReprSignHash:
		if param == 0 {
			return DefaultHashBits, nil
		}
		if param%8 != 0 || param > MaxHashBits {
			return 0, fmt.Errorf("%w: hash_bits %d is not a multiple of 8 up to %d", ErrArgument, param, MaxHashBits)
		}
		return param, nil
	}
	return 0, fmt.Errorf("%w: unknown sidecar kind %d", ErrArgument, uint32(kind))
}

// DerivedHeader returns the header (without CRC) of the sidecar that
// Derive makes of kind and param from a block with header b, so that its
// size (64 + PayloadSize) is known without reading the block: dtype
// float32 for kinds 0-2 and uint8 for kind 3; rows 1, except
// ceil(block_size / merge) for kind 2; dim head_dim, except hash_bits / 8
// for kind 3. It fails with ErrUnsupported when b is opaque (it has no
// keys), does not state num_kv_heads and head_dim, or its dtype is not
// float16, bfloat16 or float32.
func DerivedHeader(b format.BlockHeader, kind format.ReprKind, param uint32) (format.ReprHeader, error) {
	param, err := ResolveParam(kind, param)
	if err != nil {
		return format.ReprHeader{}, err
	}
	if b.Opaque() {
		return format.ReprHeader{}, fmt.Errorf("%w: block %s is opaque: it has no keys", ErrUnsupported, b.ID)
	}
	if b.NumKVHeads == 0 || b.HeadDim == 0 {
		return format.ReprHeader{}, fmt.Errorf("%w: block %s does not state num_kv_heads and head_dim", ErrUnsupported, b.ID)
	}
	if !floatDtype(b.Dtype) {
		return format.ReprHeader{}, fmt.Errorf("%w: block %s has dtype %s, want float16, bfloat16 or float32", ErrUnsupported, b.ID, b.Dtype)
	}
	r := format.ReprHeader{ID: b.ID, Kind: kind, Dtype: format.Float32, NumLayers: b.NumLayers,
		NumKVHeads: b.NumKVHeads, Rows: 1, Dim: b.HeadDim, Param: param}
	switch kind {
	case format.ReprMerged:
		r.Rows = uint32((uint64(b.BlockSize) + uint64(param) - 1) / uint64(param))
	case format.ReprSignHash:
		if b.HeadDim > MaxHashDim {
			return format.ReprHeader{}, fmt.Errorf("%w: block %s has head_dim %d, sign-hash supports up to %d", ErrUnsupported, b.ID, b.HeadDim, MaxHashDim)
		}
		if err := checkHashShape(int(b.HeadDim), int(param)); err != nil {
			return format.ReprHeader{}, err
		}
		r.Dtype, r.Dim = format.Uint8, param/8
	}
	if n, ok := r.PayloadSize(); !ok || n > math.MaxInt/2 {
		return format.ReprHeader{}, fmt.Errorf("%w: sidecar of %s would be too large", ErrUnsupported, b)
	}
	return r, nil
}

// Derive returns the complete sidecar file (64-byte UCMR header with its
// CRC-32C, then the data) of kind and param derived from block, a whole
// block file (header and payload). It reads only tensor 0 of each layer,
// the keys (or, with tensors_per_layer 1, the MLA latent), laid out
// [block_size][num_kv_heads][head_dim]. The block's header and size are
// validated (format.ValidateBlock, errors wrap format.ErrFormat) but not
// its CRC: a caller that has not verified the block does that first.
func Derive(block []byte, kind format.ReprKind, param uint32) ([]byte, error) {
	return AppendDerive(nil, block, kind, param)
}

// AppendDerive is Derive appending the sidecar file to dst; with enough
// capacity in dst it does not allocate.
func AppendDerive(dst, block []byte, kind format.ReprKind, param uint32) ([]byte, error) {
	bh, err := format.DecodeBlockHeader(block)
	if err != nil {
		return dst, fmt.Errorf("derive: %w", err)
	}
	rh, err := DerivedHeader(bh, kind, param)
	if err != nil {
		return dst, fmt.Errorf("derive: %w", err)
	}
	if err := format.ValidateBlock(bh, bh.ID, int64(len(block)), nil); err != nil {
		return dst, fmt.Errorf("derive: %w", err)
	}
	size, _ := rh.PayloadSize()
	start := len(dst)
	dst = grow(dst, format.HeaderSize+int(size))
	payload := dst[start+format.HeaderSize:]
	d := newDeriver(bh, rh)
	defer d.release()
	for l := 0; l < int(bh.NumLayers); l++ {
		off := bh.TensorOffset(l, 0)
		k := block[off : off+bh.TensorBytes()]
		out := payload[l*d.layerOut : (l+1)*d.layerOut]
		switch kind {
		case format.ReprMean:
			d.mean(out, k)
		case format.ReprMax:
			d.max(out, k)
		case format.ReprMerged:
			d.merged(out, k)
		case format.ReprSignHash:
			d.signHash(out, k)
		}
	}
	rh.PayloadCRC = format.CRC32C(payload)
	rh.Flags |= format.FlagCRC
	rh.Encode(dst[start:])
	return dst, nil
}

// grow extends b by n bytes (contents of the new bytes unspecified).
func grow(b []byte, n int) []byte {
	if cap(b)-len(b) >= n {
		return b[:len(b)+n]
	}
	nb := make([]byte, len(b)+n, len(b)+n+len(b)/4)
	copy(nb, b)
	return nb
}
