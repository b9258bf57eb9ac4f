package gpu

import (
	"bytes"
	"errors"
	"math"
	"testing"
)

// oobCases are copies outside a region of size bytes.
func oobCases(size int64) []struct {
	name string
	off  int64
	n    int
} {
	return []struct {
		name string
		off  int64
		n    int
	}{
		{"negative offset", -1, 1},
		{"negative offset, empty copy", -1, 0},
		{"offset MinInt64", math.MinInt64, 1},
		{"starts at the end", size, 1},
		{"straddles the end", size - 1, 2},
		{"longer than the region", 0, int(size) + 1},
		{"far past the end", 4 * size, 16},
		{"past the end, empty copy", size + 1, 0},
		{"off+len overflows int64", math.MaxInt64 - 8, 16},
		{"offset MaxInt64", math.MaxInt64, 1},
	}
}

func TestCheckRange(t *testing.T) {
	const size = 1000
	for _, c := range oobCases(size) {
		if err := checkRange(size, c.off, c.n); !errors.Is(err, ErrBounds) {
			t.Errorf("%s: checkRange(%d, %d, %d) = %v, want ErrBounds", c.name, size, c.off, c.n, err)
		}
	}
	for _, c := range []struct{ off, n int64 }{{0, 0}, {0, size}, {size, 0}, {size - 1, 1}, {500, 500}} {
		if err := checkRange(size, c.off, int(c.n)); err != nil {
			t.Errorf("checkRange(%d, %d, %d) = %v, want nil", size, c.off, c.n, err)
		}
	}
	if err := checkRange(0, 0, 0); err != nil {
		t.Errorf("empty copy into an empty region: %v", err)
	}
	if err := checkRange(0, 0, 1); !errors.Is(err, ErrBounds) {
		t.Errorf("one byte into an empty region: %v, want ErrBounds", err)
	}
}

// outOfBounds tries every out-of-range copy, single and batched, in and
// out: each must fail with ErrBounds, leave the host buffer untouched (out)
// and the engine's memory untouched (in, checked by the engine).
func outOfBounds(t *testing.T, r Region, e *engineProc) {
	t.Helper()
	size := r.Size()
	for _, c := range oobCases(size) {
		src := blockData(999, c.n)
		if err := r.CopyIn(c.off, src); !errors.Is(err, ErrBounds) {
			t.Errorf("%s: CopyIn(%d, %d bytes) = %v, want ErrBounds", c.name, c.off, c.n, err)
		}
		if err := r.CopyInBatch([]CopyOp{{Off: c.off, Host: src}}); !errors.Is(err, ErrBounds) {
			t.Errorf("%s: CopyInBatch = %v, want ErrBounds", c.name, err)
		}
		dst := bytes.Repeat([]byte{0xee}, c.n)
		if err := r.CopyOut(c.off, dst); !errors.Is(err, ErrBounds) {
			t.Errorf("%s: CopyOut(%d, %d bytes) = %v, want ErrBounds", c.name, c.off, c.n, err)
		}
		if err := r.CopyOutBatch([]CopyOp{{Off: c.off, Host: dst}}); !errors.Is(err, ErrBounds) {
			t.Errorf("%s: CopyOutBatch = %v, want ErrBounds", c.name, err)
		}
		if bytes.Count(dst, []byte{0xee}) != c.n {
			t.Errorf("%s: a refused CopyOut changed the host buffer", c.name)
		}
	}
	// The edges that are inside: empty copies at the end, a last byte.
	if err := r.CopyIn(size, nil); err != nil {
		t.Errorf("empty CopyIn at the end: %v", err)
	}
	if err := r.CopyOut(size, []byte{}); err != nil {
		t.Errorf("empty CopyOut at the end: %v", err)
	}
	e.verify("after refused out-of-bounds copies")
}

// badBatch sends batches of good ops with one bad op among them: nothing
// may move, in either direction.
func badBatch(t *testing.T, r Region, e *engineProc) {
	t.Helper()
	size := r.Size()
	ops := []CopyOp{
		{Off: 5 * slotSize, Host: blockData(5000, slotSize)},
		{Off: 6 * slotSize, Host: blockData(5001, 100)},
		{Off: size - 1, Host: blockData(5002, 2)}, // one byte past the end
		{Off: 0, Host: blockData(5003, 64)},
	}
	if err := r.CopyInBatch(ops); !errors.Is(err, ErrBounds) {
		t.Fatalf("CopyInBatch with one bad op = %v, want ErrBounds", err)
	}
	e.verify("after a refused batch")
	for _, op := range ops {
		for i := range op.Host {
			op.Host[i] = 0xee
		}
	}
	if err := r.CopyOutBatch(ops); !errors.Is(err, ErrBounds) {
		t.Fatalf("CopyOutBatch with one bad op = %v, want ErrBounds", err)
	}
	for i, op := range ops {
		if bytes.Count(op.Host, []byte{0xee}) != len(op.Host) {
			t.Fatalf("refused CopyOutBatch wrote into op %d's host buffer", i)
		}
	}
}
