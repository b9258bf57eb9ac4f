package fs

import (
	"testing"
	"unsafe"
)

// TestStoredNodeSize: the kernel keeps a node per looked-up block, so a
// published file's node stays small.
func TestStoredNodeSize(t *testing.T) {
	if n := unsafe.Sizeof(blockFile{}); n > 192 {
		t.Fatalf("a block's node is %d bytes, want at most 192", n)
	}
}
