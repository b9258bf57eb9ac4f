package vllm

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// TestEncodeBatch: a batch decodes, as a subscriber decodes msgspec's
// array_like structs, to [ts, [tagged events], rank] with each event's
// fields in vLLM's order.
func TestEncodeBatch(t *testing.T) {
	var buf bytes.Buffer
	b, err := encodeBatch(&buf, 1.5, []event{
		{cleared: true},
		{stored: true, medium: "CPU_TIER_ucmfs", hashes: []uint64{1, 1 << 63}},
		{medium: "DISK_TIER_ucmfs", hashes: []uint64{7}},
	}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []any
	if err := msgpack.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := []any{1.5, []any{
		[]any{"AllBlocksCleared"},
		[]any{"BlockStored", []any{uint64(1), uint64(1 << 63)}, nil, []any{}, int8(0), nil, "CPU_TIER_ucmfs", nil},
		[]any{"BlockRemoved", []any{uint64(7)}, "DISK_TIER_ucmfs"},
	}, int8(0)}
	if !reflect.DeepEqual(normalize(got), normalize(want)) {
		t.Errorf("decoded %#v\nwant %#v", got, want)
	}
}

// normalize turns every integer into a uint64, so that the test does not
// depend on the width msgpack picked.
func normalize(v any) any {
	switch x := v.(type) {
	case []any:
		out := make([]any, len(x))
		for i := range x {
			out[i] = normalize(x[i])
		}
		return out
	case int8:
		return uint64(x)
	case int64:
		return uint64(x)
	case uint8:
		return uint64(x)
	}
	return v
}

// TestRingKeepsTheLast: the replay ring keeps the last max batches and
// answers from a number on.
func TestRingKeepsTheLast(t *testing.T) {
	r := ring{max: 3}
	for i := range uint64(10) {
		r.add(i, []byte{byte(i)})
	}
	got := r.since(0)
	if len(got) != 3 || got[0].seq != 7 || got[2].seq != 9 {
		t.Errorf("since 0: %v", got)
	}
	if got := r.since(9); len(got) != 1 || got[0].seq != 9 {
		t.Errorf("since 9: %v", got)
	}
	if got := r.since(10); len(got) != 0 {
		t.Errorf("since 10: %v", got)
	}
}
