package gpu

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"unsafe"

	"github.com/ebitengine/purego"
	"github.com/ucmfs/ucmfs/internal/engine"
	"golang.org/x/sys/unix"
)

// benchKV is the engine's KV cache in BenchmarkH2D2MiB: 32 layers, K and
// V, 32 KiB per block per tensor, so a 2 MiB block is 64 pieces, 16
// blocks (32 MiB).
var benchKV = engine.KVLayout{Layers: 32, Blocks: 16, BlockBytes: 32 << 10, Align: 2 << 20}

// BenchmarkH2D2MiB measures loads of 2 MiB blocks into engine memory on a
// real GPU. Engine memory is an IPC segment of another process (package
// engine), as in production. The baseline, in the same run, is the
// driver's best case: a synchronous cuMemcpyHtoD_v2 of the same 2 MiB
// from a cuMemHostAlloc (pinned) buffer into the same device memory.
// Against it:
//
//   - tier: the source is a file on tmpfs mapped PROT_READ and
//     registered HostReadOnly, as the memory tier's pages are;
//     pageable: the same bytes in ordinary Go memory, unregistered;
//   - 1x2MiB: one copy per block; 64x32KiB: the block scattered over
//     its 32 layers' K and V slots (cuMemcpyBatchAsync where the driver
//     has it);
//   - streams=1 or 8: Config.Streams.
//
// The ratio to report is the median ns/op of the baseline divided by the
// median ns/op of a case, over -count runs. It skips without the NVIDIA
// driver and a GPU: on the stand-in driver a "copy" is a memcpy into a
// shared-memory file and its figures would say nothing about DMA.
func BenchmarkH2D2MiB(b *testing.B) {
	if _, err := Probe(DefaultLibrary); err != nil {
		b.Skipf("no NVIDIA driver and GPU here (%v): this benchmark measures DMA and only runs on a real GPU; "+
			"the stand-in driver's numbers would mean nothing", err)
	}
	const block = 2 << 20
	size := benchKV.SegmentSize()
	e := startEngine(b, "ipc", size, DefaultLibrary)
	tier := tierBuffer(b, size)
	pageable := make([]byte, size)
	copy(pageable, tier)

	for _, streams := range []int{1, 8} {
		dev, err := Open(Config{Mode: "cuda", Streams: streams, Logger: quietLog()})
		if err != nil {
			b.Fatal(err)
		}
		r, err := dev.OpenRegion(e.spec)
		if err != nil {
			b.Fatal(err)
		}
		if err := dev.RegisterHost(tier, HostReadOnly); err != nil {
			b.Fatal(err)
		}
		if streams == 1 {
			b.Run("baseline=pinned-cuMemcpyHtoD", func(b *testing.B) { pinnedBaseline(b, r.(*cudaRegion), block) })
		}
		for _, src := range []struct {
			name string
			buf  []byte
		}{{"tier", tier}, {"pageable", pageable}} {
			b.Run(fmt.Sprintf("%s/1x2MiB/streams=%d", src.name, streams), func(b *testing.B) {
				b.SetBytes(block)
				i := 0
				for b.Loop() {
					off := int64(i%benchKV.Blocks) * block
					if err := r.CopyIn(off, src.buf[off:off+block]); err != nil {
						b.Fatal(err)
					}
					i++
				}
			})
			b.Run(fmt.Sprintf("%s/64x32KiB/streams=%d", src.name, streams), func(b *testing.B) {
				b.SetBytes(block)
				i := 0
				for b.Loop() {
					n := i % benchKV.Blocks
					if err := r.CopyInBatch(blockOpsOf(benchKV, n, src.buf[int64(n)*block:])); err != nil {
						b.Fatal(err)
					}
					i++
				}
			})
		}
		r.Close()
		dev.UnregisterHost(tier) // before tierBuffer's cleanup unmaps it
		dev.Close()
	}
}

// blockOpsOf scatters payload (block n's) over its K and V slots.
func blockOpsOf(l engine.KVLayout, n int, payload []byte) []CopyOp {
	ops := make([]CopyOp, 0, 2*l.Layers)
	for layer := range l.Layers {
		for h := range 2 {
			p := l.PayloadOffset(layer, h)
			ops = append(ops, CopyOp{Off: l.Slot(layer, h, n), Host: payload[p : p+l.BlockBytes]})
		}
	}
	return ops
}

// tierBuffer maps a tmpfs file of size bytes read-only, as the memory
// tier maps its blocks.
func tierBuffer(b *testing.B, size int64) []byte {
	p := filepath.Join(shmDir(b), "tier")
	if err := os.WriteFile(p, blockData(42, int(size)), 0o600); err != nil {
		b.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	m, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { unix.Munmap(m) })
	return m
}

// pinnedBaseline times cuMemcpyHtoD_v2 of block bytes from a
// cuMemHostAlloc buffer into r's memory, on r's GPU thread.
func pinnedBaseline(b *testing.B, r *cudaRegion, block int) {
	var hostAlloc func(p **byte, n uintptr, flags uint32) cuResult
	var freeHost func(p *byte) cuResult
	var htod func(dst uint64, src *byte, n uintptr) cuResult
	l := r.c.d.lib
	purego.RegisterLibFunc(&hostAlloc, l.handle, "cuMemHostAlloc")
	purego.RegisterLibFunc(&freeHost, l.handle, "cuMemFreeHost")
	purego.RegisterLibFunc(&htod, l.handle, "cuMemcpyHtoD_v2")
	var host *byte
	if err := r.c.th.do(func() error { return l.check("cuMemHostAlloc", hostAlloc(&host, uintptr(block), 0)) }); err != nil {
		b.Fatal(err)
	}
	defer r.c.th.do(func() error { return l.check("cuMemFreeHost", freeHost(host)) })
	copy(unsafe.Slice(host, block), blockData(1, block))
	b.SetBytes(int64(block))
	i := 0
	for b.Loop() {
		off := uint64(i%benchKV.Blocks) * uint64(block)
		if err := r.c.th.do(func() error { return l.check("cuMemcpyHtoD_v2", htod(r.dptr+off, host, uintptr(block))) }); err != nil {
			b.Fatal(err)
		}
		i++
	}
	runtime.KeepAlive(r)
}
