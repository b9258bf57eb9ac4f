package engine

import "testing"

// TestKVLayout: tensors follow each other at the alignment from Start,
// slots of a block sit BlockBytes apart inside a tensor, and a payload is
// layer after layer, K before V.
func TestKVLayout(t *testing.T) {
	l := KVLayout{Layers: 2, Blocks: 3, BlockBytes: 100, Start: 50, Align: 512}
	if l.TensorSize() != 300 || l.TensorOffset(0, 0) != 50 || l.TensorOffset(0, 1) != 562 || l.TensorOffset(1, 0) != 1074 {
		t.Fatalf("tensor offsets: %d %d %d", l.TensorOffset(0, 0), l.TensorOffset(0, 1), l.TensorOffset(1, 0))
	}
	if l.SegmentSize() != 50+4*512 || l.Slot(1, 1, 2) != 50+3*512+200 {
		t.Fatalf("segment %d, slot %d", l.SegmentSize(), l.Slot(1, 1, 2))
	}
	if l.PayloadSize() != 400 || l.PayloadOffset(1, 0) != 200 || l.PayloadOffset(1, 1) != 300 {
		t.Fatalf("payload: %d %d", l.PayloadSize(), l.PayloadOffset(1, 1))
	}
	if got := (KVLayout{Layers: 1, Blocks: 2, BlockBytes: 10}).SegmentSize(); got != 40 {
		t.Fatalf("unaligned segment: %d", got)
	}
}

// TestPattern: images apply writes in order over the guard bytes.
func TestPattern(t *testing.T) {
	img := Image(100, []Write{{Off: 10, Len: 20, Seed: 1}, {Off: 20, Len: 5, Seed: 2}})
	want := GuardImage(100)
	copy(want[10:], Pattern(1, 20))
	copy(want[20:], Pattern(2, 5))
	if d := FirstDiff(img, want); d != "" {
		t.Fatal(d)
	}
	if FirstDiff(img, want[:99]) == "" || FirstDiff(Pattern(1, 8), Pattern(2, 8)) == "" {
		t.Fatal("FirstDiff missed a difference")
	}
}
