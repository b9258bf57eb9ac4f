package sparse

import (
	"fmt"

	"github.com/ucmfs/ucmfs/format"
)

// Repr is a decoded sidecar file: its header and a view of its data,
// [num_layers][num_kv_heads][rows][dim] elements of Header.Dtype,
// little-endian.
type Repr struct {
	Header format.ReprHeader
	Data   []byte // the payload; a sub-slice of the parsed file
}

// ParseRepr decodes a whole sidecar file and checks every rule of
// format.ValidateRepr, the CRC-32C included when the header flags it
// (the file name is taken to be the header's id). Errors wrap
// format.ErrFormat.
func ParseRepr(file []byte) (Repr, error) {
	h, err := format.DecodeReprHeader(file)
	if err != nil {
		return Repr{}, fmt.Errorf("parse sidecar: %w", err)
	}
	payload := file[min(len(file), format.HeaderSize):]
	crc := func() (uint32, error) { return format.CRC32C(payload), nil }
	if err := format.ValidateRepr(h, h.ID, int64(len(file)), crc); err != nil {
		return Repr{}, fmt.Errorf("parse sidecar: %w", err)
	}
	return Repr{Header: h, Data: payload}, nil
}

// Len is the number of elements of the data, layers × heads × rows × dim.
func (r Repr) Len() int {
	return int(r.Header.NumLayers) * int(r.Header.NumKVHeads) * int(r.Header.Rows) * int(r.Header.Dim)
}

// Floats appends the data, converted to float32, to dst. It fails with
// ErrUnsupported unless the dtype is float16, bfloat16 or float32.
func (r Repr) Floats(dst []float32) ([]float32, error) {
	if !floatDtype(r.Header.Dtype) {
		return dst, fmt.Errorf("%w: sidecar %s has dtype %s, want float16, bfloat16 or float32", ErrUnsupported, r.Header.ID, r.Header.Dtype)
	}
	if len(r.Data) != r.Len()*r.Header.Dtype.Size() {
		return dst, fmt.Errorf("%w: sidecar data is %d bytes, its header implies %d", ErrArgument, len(r.Data), r.Len()*r.Header.Dtype.Size())
	}
	n := len(dst)
	dst = append(dst, make([]float32, r.Len())...)
	decodeFloats(dst[n:], r.Data, r.Header.Dtype)
	return dst, nil
}
