package tiers

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/ucmfs/ucmfs/format"
)

// TestWriteThroughDirectWriteSurvivesPowerCut (the soak's seeds
// 1796661955925025800 and, it seems, 1796660185874003732): in
// write-through mode a publish is durable (Publish), also one that goes
// straight to the directory tier (directWrite): too large for memory,
// or met with memory full of pinned blocks. After a power cut the name
// holds it. The direct write committed without fsync unless the publish
// asked durable: a new version written through came back as the old
// one, and a new name written through was gone.
func TestWriteThroughDirectWriteSurvivesPowerCut(t *testing.T) {
	t.Run("too large, over an old version", func(t *testing.T) {
		writeThroughDirect(t, true, bytes.Repeat([]byte("3"), 128<<10))
	})
	t.Run("memory pinned full, a new name", func(t *testing.T) {
		writeThroughDirect(t, false, []byte("v0, written through"))
	})
}

// writeThroughDirect publishes data written through as a File, over an
// old version written through first (old) or under a new name whose
// publish meets memory full of pinned blocks, cuts the power, and reads
// it back.
func writeThroughDirect(t *testing.T, old bool, data []byte) {
	disk, dc := crashDir(t)
	mc := MemConfig{Capacity: 64 << 10, MaxPinned: -1}
	s := buildStack(t, StackConfig{WriteThrough: true, RoomWait: time.Millisecond}, mc, dc)
	k := format.FileKey("files", "d0/f2.bin")
	if old {
		if err := putFile(s, k, []byte("v2, written through"), false); err != nil {
			t.Fatal(err)
		}
	} else {
		for i := range 2 {
			bk, block := testBlock("ucmb", i, 28<<10)
			if _, err := s.Put(bk, block, false); err != nil {
				t.Fatal(err)
			}
			if err := s.Pin(bk, true); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := putFile(s, k, data, false); err != nil {
		t.Fatal(err)
	}
	disk.PowerCut()
	s.Close(context.Background())
	if err := disk.Restore(); err != nil {
		t.Fatal(err)
	}
	s = buildStack(t, StackConfig{}, mc, dc)
	h, err := s.Open(k)
	if err != nil {
		t.Fatalf("after the power cut %s: %v, want the version written through", k, err)
	}
	defer h.File.Close()
	got := make([]byte, h.Size)
	if _, err := h.File.ReadAt(got, 0); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("after the power cut %s holds %d bytes (%.20q), want the %d written through", k, len(got), got, len(data))
	}
}
