package gpu

import (
	"testing"
)

// BenchmarkCopyIn2MiB compares a simulated-device CopyIn of 2 MiB blocks
// (bounds check, region lock, fault guard, memmove into a MAP_SHARED
// shared-memory file) with a plain copy() of the same bytes into an
// ordinary []byte of the same size, in the same run. Blocks cycle through
// a 64 MiB region so the destination is not cache-resident.
func BenchmarkCopyIn2MiB(b *testing.B) {
	const block = 2 << 20
	const region = 64 << 20
	src := blockData(1, block)

	b.Run("plain-copy", func(b *testing.B) {
		dst := make([]byte, region)
		b.SetBytes(block)
		off := 0
		for b.Loop() {
			copy(dst[off:off+block], src)
			off = (off + block) % region
		}
	})

	dev, err := Open(Config{Mode: "sim", Logger: quietLog()})
	if err != nil {
		b.Fatal(err)
	}
	defer dev.Close()
	r, err := dev.OpenRegion(RegionSpec{Path: shmFile(b, region), Size: region})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()

	b.Run("sim-CopyIn", func(b *testing.B) {
		b.SetBytes(block)
		off := int64(0)
		for b.Loop() {
			if err := r.CopyIn(off, src); err != nil {
				b.Fatal(err)
			}
			off = (off + block) % region
		}
	})

	b.Run("sim-CopyInBatch32", func(b *testing.B) {
		ops := make([]CopyOp, region/block)
		for i := range ops {
			ops[i] = CopyOp{Off: int64(i) * block, Host: src}
		}
		b.SetBytes(region)
		for b.Loop() {
			if err := r.CopyInBatch(ops); err != nil {
				b.Fatal(err)
			}
		}
	})
}
