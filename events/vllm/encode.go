package vllm

import (
	"bytes"

	"github.com/vmihailenco/msgpack/v5"
)

// event is one KV event of a batch: BlockStored or BlockRemoved of some
// hashes on one medium, or AllBlocksCleared (cleared).
type event struct {
	cleared bool
	stored  bool
	medium  string
	hashes  []uint64
}

// encodeBatch encodes [ts, [events], rank] as msgspec encodes vLLM's
// KVEventBatch (array_like structs, events tagged by class name).
func encodeBatch(buf *bytes.Buffer, ts float64, evs []event, rank int) ([]byte, error) {
	buf.Reset()
	enc := msgpack.GetEncoder()
	defer msgpack.PutEncoder(enc)
	enc.Reset(buf)
	w := writer{enc: enc}
	w.arrayLen(3)
	w.float(ts)
	w.arrayLen(len(evs))
	for i := range evs {
		w.event(&evs[i])
	}
	w.int(int64(rank))
	return buf.Bytes(), w.err
}

// writer keeps the first error of a run of encoder calls.
type writer struct {
	enc *msgpack.Encoder
	err error
}

func (w *writer) do(err error) {
	if w.err == nil {
		w.err = err
	}
}

func (w *writer) arrayLen(n int)  { w.do(w.enc.EncodeArrayLen(n)) }
func (w *writer) float(f float64) { w.do(w.enc.EncodeFloat64(f)) }
func (w *writer) int(i int64)     { w.do(w.enc.EncodeInt(i)) }
func (w *writer) str(s string)    { w.do(w.enc.EncodeString(s)) }
func (w *writer) null()           { w.do(w.enc.EncodeNil()) }
func (w *writer) uint(u uint64)   { w.do(w.enc.EncodeUint(u)) }
func (w *writer) hashes(h []uint64) {
	w.arrayLen(len(h))
	for _, u := range h {
		w.uint(u)
	}
}

// event writes one tagged event.
func (w *writer) event(e *event) {
	switch {
	case e.cleared:
		w.arrayLen(1)
		w.str("AllBlocksCleared")
	case e.stored:
		// block_hashes, parent_block_hash, token_ids, block_size,
		// lora_id, medium, lora_name
		w.arrayLen(8)
		w.str("BlockStored")
		w.hashes(e.hashes)
		w.null()
		w.arrayLen(0)
		w.int(0)
		w.null()
		w.str(e.medium)
		w.null()
	default:
		w.arrayLen(3)
		w.str("BlockRemoved")
		w.hashes(e.hashes)
		w.str(e.medium)
	}
}
