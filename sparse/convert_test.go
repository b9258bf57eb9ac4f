package sparse

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/ucmfs/ucmfs/format"
)

// TestF16Exhaustive checks every binary16 value, subnormals, infinities
// and NaNs included, against the math.Ldexp reference.
func TestF16Exhaustive(t *testing.T) {
	for i := 0; i < 1<<16; i++ {
		h := uint16(i)
		got, want := f16ToF32(h), refF16(h)
		if math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("f16 %#04x: got %v (%#08x), want %v (%#08x)", h, got, math.Float32bits(got), want, math.Float32bits(want))
		}
	}
	cases := map[uint16]float32{
		0x0000: 0, 0x3c00: 1, 0xc000: -2, 0x7bff: 65504, 0x0001: 0x1p-24, 0x03ff: 1023 * 0x1p-24,
		0x0400: 0x1p-14, 0x7c00: float32(math.Inf(1)), 0xfc00: float32(math.Inf(-1)), 0x3555: 0x1.554p-2,
	}
	for h, want := range cases {
		if got := f16ToF32(h); got != want {
			t.Errorf("f16 %#04x = %v, want %v", h, got, want)
		}
	}
	if got := f16ToF32(0x8000); got != 0 || !math.Signbit(float64(got)) {
		t.Errorf("f16 -0 = %v", got)
	}
	for _, h := range []uint16{0x7c01, 0x7e00, 0xffff} {
		if got := f16ToF32(h); !math.IsNaN(float64(got)) {
			t.Errorf("f16 %#04x = %v, want NaN", h, got)
		}
	}
}

func TestBF16Exhaustive(t *testing.T) {
	for i := 0; i < 1<<16; i++ {
		h := uint16(i)
		if got := math.Float32bits(bf16ToF32(h)); got != uint32(h)<<16 {
			t.Fatalf("bf16 %#04x: bits %#08x", h, got)
		}
	}
	if bf16ToF32(0x3f80) != 1 || bf16ToF32(0xc040) != -3 || !math.IsInf(float64(bf16ToF32(0x7f80)), 1) {
		t.Fatal("bf16 constants")
	}
}

func TestDecodeFloats(t *testing.T) {
	var f16, bf16, f32 []byte
	var want []float32
	for i := 0; i < 1<<16; i += 7 {
		f16 = binary.LittleEndian.AppendUint16(f16, uint16(i))
		bf16 = binary.LittleEndian.AppendUint16(bf16, uint16(i))
		f32 = binary.LittleEndian.AppendUint32(f32, uint32(i)*65537)
		want = append(want, f16ToF32(uint16(i)))
	}
	n := len(want)
	dst := make([]float32, n)
	decodeFloats(dst, f16, format.Float16)
	for i := range dst {
		if math.Float32bits(dst[i]) != math.Float32bits(want[i]) {
			t.Fatalf("float16 element %d", i)
		}
	}
	decodeFloats(dst, bf16, format.BFloat16)
	for i := range dst {
		if math.Float32bits(dst[i]) != uint32(7*i)<<16 {
			t.Fatalf("bfloat16 element %d", i)
		}
	}
	decodeFloats(dst, f32, format.Float32)
	for i := range dst {
		if math.Float32bits(dst[i]) != uint32(7*i)*65537 {
			t.Fatalf("float32 element %d", i)
		}
	}
	out := make([]byte, 4*n)
	putFloats(out, dst)
	if string(out) != string(f32) {
		t.Fatal("putFloats does not invert float32 decoding")
	}
}
