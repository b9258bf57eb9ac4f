package engine

// KVLayout is a paged KV cache as vLLM lays one out per layer: every
// layer has a K tensor and a V tensor of Blocks slots of BlockBytes each,
// and the tensors sit one after another inside one segment, from Start,
// each aligned to Align bytes (as a caching allocator places tensors
// inside a larger segment). A block's bytes for one layer are its K slot
// and its V slot: 2×Layers pieces per block, which is why a load of one
// block is many copies unless they are batched.
type KVLayout struct {
	Layers     int
	Blocks     int
	BlockBytes int64 // bytes of one block's K (or V) in one layer
	Start      int64 // offset of the first tensor in the segment
	Align      int64 // tensor alignment (0 or 1: none)
}

// TensorSize is the size of one K or V tensor.
func (l KVLayout) TensorSize() int64 { return int64(l.Blocks) * l.BlockBytes }

// stride is the distance between two tensors.
func (l KVLayout) stride() int64 {
	n := l.TensorSize()
	if l.Align > 1 {
		n = (n + l.Align - 1) / l.Align * l.Align
	}
	return n
}

// TensorOffset is where layer's K (kv 0) or V (kv 1) tensor starts in
// the segment: what an engine sends with the segment's handle to
// register that tensor alone.
func (l KVLayout) TensorOffset(layer, kv int) int64 {
	return l.Start + int64(2*layer+kv)*l.stride()
}

// SegmentSize is the segment size the layout needs.
func (l KVLayout) SegmentSize() int64 { return l.TensorOffset(l.Layers, 0) }

// Slot is where block's K or V bytes of layer lie in the segment.
func (l KVLayout) Slot(layer, kv, block int) int64 {
	return l.TensorOffset(layer, kv) + int64(block)*l.BlockBytes
}

// PayloadOffset is where layer's K or V bytes lie in a block's payload
// as ucmfs stores it: layer after layer, K before V.
func (l KVLayout) PayloadOffset(layer, kv int) int64 { return int64(2*layer+kv) * l.BlockBytes }

// PayloadSize is the size of one block's payload.
func (l KVLayout) PayloadSize() int64 { return int64(2*l.Layers) * l.BlockBytes }
