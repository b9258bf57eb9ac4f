package fs

import (
	"bytes"
	"crypto/md5"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/gpu"
	"github.com/ucmfs/ucmfs/tiers"
)

// gpuModel is the model the GPU tests store blocks in.
const gpuModel = "org--GPU-Test-1B"

// gpuLayers is the number of layers of the GPU tests' blocks.
const gpuLayers = 4

// newGPUMount mounts a stack whose memory tier registers its mappings
// with dev (sim when nil), with dev as the mount's GPU device, and makes
// gpuModel. dev is closed after the stack.
func newGPUMount(t testing.TB, dev gpu.Device, opts Options) *testMount {
	t.Helper()
	requireFUSE(t)
	if dev == nil {
		var err error
		if dev, err = gpu.Open(gpu.Config{Mode: "sim", Logger: testLogger()}); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { dev.Close() }) // runs last: after the unmount and the stack's close
	st := newTestStackWith(t, tiers.MemConfig{Capacity: 64 << 20, Host: gpu.TierPages{Dev: dev}}, tiers.DirConfig{Kind: "nvme"})
	opts.GPU = dev
	m := newMountWith(t, st, opts)
	if err := os.Mkdir(m.path(gpuModel), 0o755); err != nil {
		t.Fatal(err)
	}
	return m
}

// gpuBlock builds block n of gpuModel: gpuLayers layers of perLayer
// bytes each (K and V, no heads stated; perLayer even),
// random bytes seeded by n.
func gpuBlock(n, perLayer int) (format.Key, []byte) {
	id := format.ID(md5.Sum(fmt.Appendf(nil, "gpu/%d", n)))
	payload := make([]byte, gpuLayers*perLayer)
	r := rand.New(rand.NewPCG(uint64(n), 7))
	for i := 0; i < len(payload); i += 8 {
		binary.LittleEndian.PutUint64(payload[i:], r.Uint64())
	}
	h := format.BlockHeader{ID: id, NumLayers: gpuLayers, BlockSize: 16, Dtype: format.Float16}
	return format.Key{Model: gpuModel, ID: id}, format.NewBlock(h, payload)
}

// guardByte is the byte a fresh region holds at offset i.
func guardByte(i int) byte { return byte(i*131 + 7) }

// simRegion is a shared-memory file standing for device memory, each
// byte guardByte(offset) at first.
type simRegion struct {
	t    testing.TB
	path string
	want []byte // what the region must hold: guard bytes, then what was loaded
}

// newSimRegion creates a region file of size bytes.
func newSimRegion(t testing.TB, size int) *simRegion {
	t.Helper()
	dir, err := os.MkdirTemp("/dev/shm", "ucmfs-gpu-test-")
	if err != nil {
		t.Skipf("no /dev/shm: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	r := &simRegion{t: t, path: filepath.Join(dir, "region"), want: make([]byte, size)}
	for i := range r.want {
		r.want[i] = guardByte(i)
	}
	if err := os.WriteFile(r.path, r.want, 0o600); err != nil {
		t.Fatal(err)
	}
	return r
}

// expect records that off should now hold b.
func (r *simRegion) expect(off int, b []byte) { copy(r.want[off:], b) }

// check compares the file with what it must hold, naming the first
// differing offset.
func (r *simRegion) check(what string) {
	r.t.Helper()
	got, err := os.ReadFile(r.path)
	if err != nil {
		r.t.Fatal(err)
	}
	if !bytes.Equal(got, r.want) {
		i := 0
		for i < len(got) && i < len(r.want) && got[i] == r.want[i] {
			i++
		}
		r.t.Fatalf("%s: the region differs from what it must hold at offset %d (%d bytes, want %d)", what, i, len(got), len(r.want))
	}
}

// write puts b at off, as the engine writing its own memory.
func (r *simRegion) write(off int, b []byte) {
	r.t.Helper()
	f, err := os.OpenFile(r.path, os.O_RDWR, 0)
	if err != nil {
		r.t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, int64(off)); err != nil {
		r.t.Fatal(err)
	}
	r.expect(off, b)
}

// register registers the whole region in the session and returns its
// number.
func (r *simRegion) register(c *ctl) string {
	c.t.Helper()
	a := c.mustOK(fmt.Sprintf("register sim %s %d", r.path, len(r.want)))
	var id string
	if _, err := fmt.Sscanf(a, "ok region=%s", &id); err != nil {
		c.t.Fatalf("register: %q", a)
	}
	return id
}

// layers returns layers first..last of a block file's payload.
func layers(block []byte, first, last int) []byte {
	per := (len(block) - format.HeaderSize) / gpuLayers
	return block[format.HeaderSize+first*per : format.HeaderSize+(last+1)*per]
}
