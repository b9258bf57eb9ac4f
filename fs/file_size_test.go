package fs

import (
	"testing"
	"unsafe"
)

// TestStoredNodeSize: the kernel keeps a node per looked-up block, so a
// published file's node stays small (192 bytes, and 16 more since a key
// carries a File's path).
func TestStoredNodeSize(t *testing.T) {
	if n := unsafe.Sizeof(blockFile{}); n > 208 {
		t.Fatalf("a block's node is %d bytes, want at most 208", n)
	}
}
