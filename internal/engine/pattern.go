package engine

import (
	"fmt"
	"math/rand/v2"
)

// Write is one write into engine memory: Pattern(Seed, Len) at Off.
type Write struct {
	Off  int64
	Len  int
	Seed uint64
}

// Guard is the byte an untouched offset holds: a pattern that differs
// between neighbouring offsets, so a copy that lands shifted shows.
func Guard(i int64) byte { return byte(i*131+i>>9*7) ^ 0x5a }

// GuardImage is size bytes of guard pattern.
func GuardImage(size int64) []byte {
	b := make([]byte, size)
	for i := range b {
		b[i] = Guard(int64(i))
	}
	return b
}

// Pattern is the deterministic content of a write.
func Pattern(seed uint64, n int) []byte {
	var key [32]byte
	for i := range 8 {
		key[i] = byte(seed >> (8 * i))
	}
	b := make([]byte, n)
	rand.NewChaCha8(key).Read(b)
	return b
}

// Image is memory after writes, applied in order over the guard.
func Image(size int64, writes []Write) []byte {
	b := GuardImage(size)
	for _, w := range writes {
		copy(b[w.Off:], Pattern(w.Seed, w.Len))
	}
	return b
}

// FirstDiff describes the first differing byte, or "".
func FirstDiff(got, want []byte) string {
	if len(got) != len(want) {
		return fmt.Sprintf("%d bytes, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			return fmt.Sprintf("mismatch at offset %d: got %#x want %#x", i, got[i], want[i])
		}
	}
	return ""
}
