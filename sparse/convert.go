package sparse

import (
	"encoding/binary"
	"math"

	"github.com/ucmfs/ucmfs/format"
)

// f16ToF32 converts an IEEE 754 binary16 value to float32. Every binary16
// value, subnormals, infinities and NaN payloads included, is exactly
// representable in float32, so the conversion is exact.
func f16ToF32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	man := uint32(h & 0x3ff)
	switch exp {
	case 0: // zero or subnormal: man × 2^-24
		f := float32(man) * 0x1p-24
		return math.Float32frombits(sign | math.Float32bits(f))
	case 0x1f: // infinity or NaN, payload kept
		return math.Float32frombits(sign | 0x7f800000 | man<<13)
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | man<<13)
}

// bf16ToF32 converts a bfloat16 value (the high half of a float32) to
// float32, exactly.
func bf16ToF32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// floatDtype reports whether d is one of the dtypes this package decodes.
func floatDtype(d format.Dtype) bool {
	return d == format.Float16 || d == format.BFloat16 || d == format.Float32
}

// decodeFloats converts len(dst) little-endian elements of dtype dt from
// src into dst. dt must satisfy floatDtype and src must hold
// len(dst) × dt.Size() bytes.
func decodeFloats(dst []float32, src []byte, dt format.Dtype) {
	le := binary.LittleEndian
	switch dt {
	case format.Float32:
		src = src[:4*len(dst)]
		for i := range dst {
			dst[i] = math.Float32frombits(le.Uint32(src[4*i:]))
		}
	case format.BFloat16:
		src = src[:2*len(dst)]
		for i := range dst {
			dst[i] = math.Float32frombits(uint32(le.Uint16(src[2*i:])) << 16)
		}
	case format.Float16:
		src = src[:2*len(dst)]
		for i := range dst {
			dst[i] = f16ToF32(le.Uint16(src[2*i:]))
		}
	default:
		panic("sparse: decodeFloats of " + dt.String())
	}
}

// putFloats writes src as little-endian float32 into dst[:4*len(src)].
func putFloats(dst []byte, src []float32) {
	dst = dst[:4*len(src)]
	for i, v := range src {
		binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(v))
	}
}

// accumulate adds the len(acc) elements of dtype dt in src to acc.
func accumulate(acc []float64, src []byte, dt format.Dtype) {
	le := binary.LittleEndian
	switch dt {
	case format.Float32:
		src = src[:4*len(acc)]
		for i := range acc {
			acc[i] += float64(math.Float32frombits(le.Uint32(src[4*i:])))
		}
	case format.BFloat16:
		src = src[:2*len(acc)]
		for i := range acc {
			acc[i] += float64(math.Float32frombits(uint32(le.Uint16(src[2*i:])) << 16))
		}
	case format.Float16:
		src = src[:2*len(acc)]
		for i := range acc {
			acc[i] += float64(f16ToF32(le.Uint16(src[2*i:])))
		}
	default:
		panic("sparse: accumulate of " + dt.String())
	}
}

// maximize sets m[i] to the larger of m[i] and element i of src (builtin
// max: a NaN wins, +0 beats -0).
func maximize(m []float32, src []byte, dt format.Dtype) {
	le := binary.LittleEndian
	switch dt {
	case format.Float32:
		src = src[:4*len(m)]
		for i := range m {
			m[i] = max(m[i], math.Float32frombits(le.Uint32(src[4*i:])))
		}
	case format.BFloat16:
		src = src[:2*len(m)]
		for i := range m {
			m[i] = max(m[i], math.Float32frombits(uint32(le.Uint16(src[2*i:]))<<16))
		}
	case format.Float16:
		src = src[:2*len(m)]
		for i := range m {
			m[i] = max(m[i], f16ToF32(le.Uint16(src[2*i:])))
		}
	default:
		panic("sparse: maximize of " + dt.String())
	}
}
