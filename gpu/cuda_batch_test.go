package gpu

import (
	"testing"

	"github.com/ucmfs/ucmfs/internal/engine"
)

// kv is the layout of the batch tests: 32 layers, K and V, 32 KiB per
// block per tensor (a 2 MiB block is 64 pieces), 4 blocks, tensors at an
// offset inside the segment as a caching allocator places them.
var kv = engine.KVLayout{Layers: 32, Blocks: 4, BlockBytes: 32 << 10, Start: 4096, Align: 4096}

// blockOps are the 64 copies of block's payload into its slots.
func blockOps(r Region, block int, payload []byte) []CopyOp {
	var ops []CopyOp
	for layer := range kv.Layers {
		for h := range 2 {
			p := kv.PayloadOffset(layer, h)
			ops = append(ops, CopyOp{Off: kv.Slot(layer, h, block), Host: payload[p : p+kv.BlockBytes]})
		}
	}
	return ops
}

// wroteBlock records blockOps' writes of a payload made of seed's pattern.
func wroteBlock(e *engineProc, block int, seed uint64) {
	for layer := range kv.Layers {
		for h := range 2 {
			e.wrote(write{Off: kv.Slot(layer, h, block), Len: int(kv.BlockBytes), Seed: seed + uint64(2*layer+h)})
		}
	}
}

// payloadOf builds a block payload whose pieces are seed+i's patterns.
func payloadOf(seed uint64) []byte {
	var b []byte
	for i := range 2 * kv.Layers {
		b = append(b, blockData(seed+uint64(i), int(kv.BlockBytes))...)
	}
	return b
}

// TestFakeCUDABatchedSubmission: a 2 MiB block scattered over 32 layers'
// K and V slots costs one cuMemcpyBatchAsync per stream, not 64 copies;
// without the batch entry point, pieces that continue each other on both
// sides are merged into one copy; the bytes land right either way.
func TestFakeCUDABatchedSubmission(t *testing.T) {
	lib := fakeCUDA(t)
	e := startEngine(t, "ipc", kv.SegmentSize(), lib)
	for _, c := range []struct {
		name            string
		streams, batchs int
		batchAPI        bool
	}{
		{"batch API, 1 stream", 1, 1, true},
		{"batch API, 4 streams", 4, 4, true},
	} {
		d, fc := openFakeWith(t, Config{Streams: c.streams})
		r, err := d.OpenRegion(e.spec)
		if err != nil {
			t.Fatal(err)
		}
		calls, copies := fc.counter(fakeBatchCalls), fc.counter(fakeAsyncCopies)
		seed := uint64(100 * c.streams)
		if err := r.CopyInBatch(blockOps(r, c.streams-1, payloadOf(seed))); err != nil {
			t.Fatal(err)
		}
		wroteBlock(e, c.streams-1, seed)
		if n := fc.counter(fakeBatchCalls) - calls; n != int64(c.batchs) || fc.counter(fakeAsyncCopies) != copies {
			t.Errorf("%s: %d batch calls and %d single copies, want %d and 0", c.name, n, fc.counter(fakeAsyncCopies)-copies, c.batchs)
		}
		r.Close()
		d.Close()
	}
	e.verify("after batched blocks")

	fc := fakeControl(t, lib)
	fc.setBatch(0)
	defer fc.setBatch(1)
	d, _ := openFakeWith(t, Config{Streams: 1})
	if d.Stats().BatchAPI {
		t.Fatal("batch API in use although the driver does not offer it")
	}
	r, err := d.OpenRegion(e.spec)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	copies := fc.counter(fakeAsyncCopies)
	if err := r.CopyInBatch(blockOps(r, 2, payloadOf(7))); err != nil {
		t.Fatal(err)
	}
	wroteBlock(e, 2, 7)
	if n := fc.counter(fakeAsyncCopies) - copies; n != 64 {
		t.Errorf("scattered pieces without the batch API: %d copies, want 64", n)
	}
	// 64 pieces contiguous on both sides: one copy.
	whole := payloadOf(9)
	var ops []CopyOp
	for i := range 64 {
		ops = append(ops, CopyOp{Off: kv.TensorOffset(0, 0) + int64(i)*kv.BlockBytes/2, Host: whole[i*int(kv.BlockBytes)/2 : (i+1)*int(kv.BlockBytes)/2]})
	}
	copies = fc.counter(fakeAsyncCopies)
	if err := r.CopyInBatch(ops); err != nil {
		t.Fatal(err)
	}
	if n := fc.counter(fakeAsyncCopies) - copies; n != 1 {
		t.Errorf("contiguous pieces: %d copies, want 1 (merged)", n)
	}
	got := make([]byte, len(whole)/2)
	if err := r.CopyOut(kv.TensorOffset(0, 0), got); err != nil || firstDiff(got, whole[:len(got)]) != "" {
		t.Fatalf("merged copy: %v", err)
	}
}

// TestFakeCUDAKVRegions: K and V tensors registered one by one (each a
// region at its offset inside the segment, all through one IPC handle)
// and a block scattered over them with CopyInRegions, submitted once.
func TestFakeCUDAKVRegions(t *testing.T) {
	d, fc := openFakeWith(t, Config{Streams: 1})
	e := startEngine(t, "ipc", kv.SegmentSize(), fakeCUDA(t))
	tensors := make([][2]Region, kv.Layers)
	for layer := range kv.Layers {
		for h := range 2 {
			r, err := d.OpenRegion(RegionSpec{Handle: e.spec.Handle, Offset: kv.TensorOffset(layer, h), Size: kv.TensorSize()})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			tensors[layer][h] = r
		}
	}
	payload := payloadOf(50)
	var ops []RegionOp
	for layer := range kv.Layers {
		for h := range 2 {
			p := kv.PayloadOffset(layer, h)
			ops = append(ops, RegionOp{Region: tensors[layer][h], Off: 1 * kv.BlockBytes, Host: payload[p : p+kv.BlockBytes]})
		}
	}
	calls := fc.counter(fakeBatchCalls)
	if err := CopyInRegions(ops); err != nil {
		t.Fatal(err)
	}
	if n := fc.counter(fakeBatchCalls) - calls; n != 1 {
		t.Errorf("a block over 64 tensors: %d batch calls, want 1", n)
	}
	wroteBlock(e, 1, 50)
	e.verify("after a block scattered over K and V tensors")
	bad := append(ops[:1:1], RegionOp{Region: tensors[0][0], Off: kv.TensorSize(), Host: []byte{1}})
	if err := CopyInRegions(bad); err == nil {
		t.Error("CopyInRegions with an op past its region succeeded")
	}
}
