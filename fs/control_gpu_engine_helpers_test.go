package fs

import (
	"crypto/md5"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ebitengine/purego"
	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/gpu"
	"github.com/ucmfs/ucmfs/internal/engine"
)

// The GPU tests that play an engine in a process of its own: this test
// binary re-executed with UCMFS_ENGINE set (TestMain), package internal/engine.

// testKV is the engine's KV cache: per-layer K and V tensors of 8 block
// slots of 2 KiB, one after another in one segment, 4 KiB aligned.
var testKV = engine.KVLayout{Layers: gpuLayers, Blocks: 8, BlockBytes: 2048, Start: 4096, Align: 4096}

// startEngine starts an engine process of kind (sim, ipc or vmm) with
// size bytes; files are inherited by it, env added to its environment.
func startEngine(t testing.TB, kind string, size int64, files []*os.File, env ...string) *engine.Proc {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	shm, err := os.MkdirTemp("/dev/shm", "ucmfs-fs-engine-")
	if err != nil {
		shm = t.TempDir()
	} else {
		t.Cleanup(func() { os.RemoveAll(shm) })
	}
	p, err := engine.Start(exe, t.TempDir(), files, append([]string{engine.EnvKind + "=" + kind,
		engine.EnvSize + "=" + strconv.FormatInt(size, 10), engine.EnvDir + "=" + shm, "FAKECUDA_DIR=" + shm}, env...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Quit(); err != nil {
			t.Error(err)
		}
	})
	return p
}

// kvSeed is the seed of block n's K (kv 0) or V (kv 1) bytes of layer.
func kvSeed(n, layer, kv int) uint64 { return uint64(n*1000 + 2*layer + kv) }

// kvBlock is block n of gpuModel laid out for testKV: layer after layer,
// its K bytes then its V bytes, each engine.Pattern(kvSeed(...)), so the
// engine can check where they land.
func kvBlock(n int) (format.Key, []byte) {
	id := format.ID(md5.Sum(fmt.Appendf(nil, "gpu-kv/%d", n)))
	var payload []byte
	for l := range testKV.Layers {
		for kv := range 2 {
			payload = append(payload, engine.Pattern(kvSeed(n, l, kv), int(testKV.BlockBytes))...)
		}
	}
	h := format.BlockHeader{ID: id, NumLayers: gpuLayers, BlockSize: 16, Dtype: format.Float16}
	return format.Key{Model: gpuModel, ID: id}, format.NewBlock(h, payload)
}

// putKV publishes kvBlock(n) through the mount (the memory tier maps and
// registers it).
func putKV(t testing.TB, m *testMount, n int) format.Key {
	t.Helper()
	k, b := kvBlock(n)
	if err := writeFile(m.keyPath(k), b); err != nil {
		t.Fatal(err)
	}
	return k
}

// loadedKV records, for the engine's check, that layers first..last of
// block n went to slot.
func loadedKV(p *engine.Proc, n, slot, first, last int) {
	for l := first; l <= last; l++ {
		for kv := range 2 {
			p.Wrote(engine.Write{Off: testKV.Slot(l, kv, slot), Len: int(testKV.BlockBytes), Seed: kvSeed(n, l, kv)})
		}
	}
}

// registerKV registers every K and V tensor of an IPC engine as a region
// and returns the load target "k0,k1,.../v0,v1,...".
func registerKV(c *ctl, p *engine.Proc) string {
	var k, v []string
	for l := range testKV.Layers {
		for kv, list := range []*[]string{&k, &v} {
			a := c.mustOK(fmt.Sprintf("register cuda %s %d offset=%d uuid=%s", p.Handle, testKV.TensorSize(),
				testKV.TensorOffset(l, kv), p.UUID))
			*list = append(*list, strings.TrimPrefix(a, "ok region="))
		}
	}
	return strings.Join(k, ",") + "/" + strings.Join(v, ",")
}

// cudaMount mounts with the stand-in driver's device and a GPU socket in
// a temporary directory.
func cudaMount(t testing.TB) (*testMount, string) {
	t.Helper()
	lib := fakeCUDA(t)
	dev, err := gpu.Open(gpu.Config{Mode: "cuda", Library: lib, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	return newGPUMount(t, dev, Options{GPUSocket: filepath.Join(t.TempDir(), "gpu.sock")}), lib
}

// verifyEngine has the engine check all of its memory.
func verifyEngine(t testing.TB, p *engine.Proc, what string) {
	t.Helper()
	if err := p.Verify(); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// fakeCounter reads the stand-in driver's counter i (0 single async
// copies, 1 cuMemcpyBatchAsync calls), from the library this process
// loaded as its device.
func fakeCounter(t testing.TB, lib string, i int32) int64 {
	t.Helper()
	h, err := purego.Dlopen(lib, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		t.Fatal(err)
	}
	var counter func(int32) int64
	purego.RegisterLibFunc(&counter, h, "fakecuda_counter")
	return counter(i)
}
