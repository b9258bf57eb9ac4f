package tiers

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ucmfs/ucmfs/format"
)

// testBlockNoCRC is testBlock with no CRC in the header (flags 0), as an
// engine that leaves the CRC to ucmfs writes it.
func testBlockNoCRC(model string, n, payload int) (format.Key, []byte) {
	k, data := testBlock(model, n, payload)
	h, err := format.DecodeBlockHeader(data[:format.HeaderSize])
	if err != nil {
		panic(err)
	}
	h.Flags, h.PayloadCRC = 0, 0
	h.Encode(data[:format.HeaderSize])
	return k, data
}

// TestStackCRCWithoutHeaderCRC: a block whose header states no CRC is
// published without one; Stat computes it from memory; the write-back
// copy records it on the directory tier (xattr) and in memory.
func TestStackCRCWithoutHeaderCRC(t *testing.T) {
	s := newTestStack(t, 8<<20, t.TempDir(), StackConfig{})
	k, data := testBlockNoCRC("m", 1, 100<<10)
	want := format.CRC32C(data[format.HeaderSize:])
	info, err := s.Put(k, data, false)
	if err != nil {
		t.Fatal(err)
	}
	if info.HasCRC {
		t.Fatalf("publish computed a CRC the header does not state: %+v", info)
	}
	if err := s.Flush(context.Background(), k); err != nil {
		t.Fatal(err)
	}
	if in, err := s.mem.Stat(k); err != nil || !in.HasCRC || in.CRC != want {
		t.Fatalf("memory copy after write-back: %+v %v, want CRC %08x", in, err, want)
	}
	d := s.dirs[0]
	if crc, has, err := d.CRC(k); err != nil || !has || crc != want {
		t.Fatalf("directory copy: CRC %08x %v %v, want %08x", crc, has, err, want)
	}
	if bi, err := s.Stat(k); err != nil || !bi.HasCRC || bi.CRC != want {
		t.Fatalf("stat: %+v %v", bi, err)
	}
	if crc, has, err := s.CRC(k); err != nil || !has || crc != want {
		t.Fatalf("CRC: %08x %v %v", crc, has, err)
	}
}

// TestStackCRCComputedOnDemand: on a memory-only stack (no write-back)
// Stat reads no file and reports no CRC; CRC computes it once and the
// tier keeps it.
func TestStackCRCComputedOnDemand(t *testing.T) {
	s := newTestStack(t, 8<<20, "", StackConfig{})
	k, data := testBlockNoCRC("m", 2, 50<<10)
	if _, err := s.Put(k, data, false); err != nil {
		t.Fatal(err)
	}
	if bi, err := s.Stat(k); err != nil || bi.HasCRC {
		t.Fatalf("Stat before anything computed the CRC: %+v %v", bi, err)
	}
	want := format.CRC32C(data[format.HeaderSize:])
	if crc, has, err := s.CRC(k); err != nil || !has || crc != want {
		t.Fatalf("CRC: %08x %v %v, want %08x", crc, has, err, want)
	}
	if bi, _ := s.Stat(k); !bi.HasCRC || bi.CRC != want {
		t.Fatalf("the computed CRC is not kept: %+v", bi)
	}
	if _, _, err := s.CRC(format.Key{Model: "m", ID: format.ID{9}}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("CRC of an absent block: %v, want ErrNotFound", err)
	}
}

// TestStackCRCAfterRestart: a block found by the rebuild gets its CRC
// from the directory tier's xattr, through CRC, not Stat.
func TestStackCRCAfterRestart(t *testing.T) {
	dir := t.TempDir()
	s1 := newTestStack(t, 8<<20, dir, StackConfig{})
	k, data := testBlockNoCRC("m", 7, 20<<10)
	if _, err := s1.Put(k, data, true); err != nil {
		t.Fatal(err)
	}
	s1.Close(context.Background())
	s2 := newTestStack(t, 8<<20, dir, StackConfig{})
	if bi, err := s2.Stat(k); err != nil || bi.HasCRC || bi.Holders[0] != "nvme" {
		t.Fatalf("stat after restart: %+v %v", bi, err)
	}
	want := format.CRC32C(data[format.HeaderSize:])
	if crc, has, err := s2.CRC(k); err != nil || !has || crc != want {
		t.Fatalf("CRC after restart: %08x %v %v, want %08x", crc, has, err, want)
	}
}

// TestStackCRCFlaggedMismatchRejected: a header that states a CRC is
// checked at publish, wrong or not.
func TestStackCRCFlaggedMismatchRejected(t *testing.T) {
	s := newTestStack(t, 8<<20, "", StackConfig{})
	k, data := testBlock("m", 3, 8<<10)
	info, err := s.Put(k, data, false)
	if err != nil || !info.HasCRC || info.CRC != format.CRC32C(data[format.HeaderSize:]) {
		t.Fatalf("a stated CRC is the block's at once: %+v %v", info, err)
	}
	k2, bad := testBlock("m", 4, 8<<10)
	bad[format.HeaderSize+5] ^= 0x10
	if _, err := s.Put(k2, bad, false); !errors.Is(err, ErrInvalid) {
		t.Fatalf("stated CRC that does not match: %v, want ErrInvalid", err)
	}
	// Without a stated CRC a changed payload is a valid block.
	k3, unflagged := testBlockNoCRC("m", 5, 8<<10)
	unflagged[format.HeaderSize+5] ^= 0x10
	if _, err := s.Put(k3, unflagged, false); err != nil {
		t.Fatal(err)
	}
}

// TestStackCRCDirectWrite: a block written straight to the directory tier
// (memory full of dirty blocks) gets its CRC there too.
func TestStackCRCDirectWrite(t *testing.T) {
	s := newTestStack(t, 64<<10, t.TempDir(), StackConfig{RoomWait: 50 * time.Millisecond})
	k, data := testBlockNoCRC("m", 6, 100<<10) // larger than the memory tier
	if _, err := s.Put(k, data, false); err != nil {
		t.Fatal(err)
	}
	want := format.CRC32C(data[format.HeaderSize:])
	if crc, has, err := s.dirs[0].CRC(k); err != nil || !has || crc != want {
		t.Fatalf("direct write: CRC %08x %v %v, want %08x", crc, has, err, want)
	}
}
