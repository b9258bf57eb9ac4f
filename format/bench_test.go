package format

import "testing"

func BenchmarkEncodeBlockHeader(b *testing.B) {
	h, _ := goldenBlock()
	buf := make([]byte, HeaderSize)
	b.SetBytes(HeaderSize)
	for b.Loop() {
		h.Encode(buf)
	}
}

func BenchmarkDecodeBlockHeader(b *testing.B) {
	h, p := goldenBlock()
	buf := NewBlock(h, p)[:HeaderSize]
	b.SetBytes(HeaderSize)
	for b.Loop() {
		if _, err := DecodeBlockHeader(buf); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeReprHeader(b *testing.B) {
	h, p := goldenRepr()
	buf := NewRepr(h, p)[:HeaderSize]
	b.SetBytes(HeaderSize)
	for b.Loop() {
		if _, err := DecodeReprHeader(buf); err != nil {
			b.Fatal(err)
		}
	}
}

const twoMiB = 2 << 20

// BenchmarkCRC32C_2MiB is the CRC of one typical block payload; compare
// with BenchmarkMemcpy_2MiB of the same run.
func BenchmarkCRC32C_2MiB(b *testing.B) {
	buf := make([]byte, twoMiB)
	for i := range buf {
		buf[i] = byte(i * 31)
	}
	b.SetBytes(twoMiB)
	for b.Loop() {
		_ = CRC32C(buf)
	}
}

// BenchmarkMemcpy_2MiB is a plain copy of 2 MiB, the floor CRC32C is
// measured against.
func BenchmarkMemcpy_2MiB(b *testing.B) {
	src := make([]byte, twoMiB)
	dst := make([]byte, twoMiB)
	b.SetBytes(twoMiB)
	for b.Loop() {
		copy(dst, src)
	}
}

func BenchmarkChain_1kTokens(b *testing.B) {
	tokens := make([]uint32, 1024)
	for i := range tokens {
		tokens[i] = uint32(i * 7919)
	}
	meta := Meta("meta-llama/Llama-3.1-8B", 1, "bfloat16", 0)
	b.SetBytes(int64(4 * len(tokens)))
	for b.Loop() {
		_ = Chain(meta, 16, tokens)
	}
}
