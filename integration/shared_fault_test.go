package integration

import (
	"bytes"
	"errors"
	"io"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/internal/faultfs"
)

// bigBlock is a valid block of id with a payload of n bytes, so a read
// of it takes many requests.
func bigBlock(id string, n int) []byte {
	bid, _ := format.ParseID(id)
	payload := make([]byte, n)
	for i := range payload {
		payload[i] = byte(i*7 + int(bid[1]))
	}
	h := format.BlockHeader{ID: bid, NumLayers: 1, BlockSize: 1, Dtype: format.Uint8,
		PayloadCRC: format.CRC32C(payload), Flags: format.FlagCRC, PayloadLen: uint64(n)}
	return format.NewBlock(h, payload)
}

// TestSharedFaults: three daemons over a shared directory seen through
// internal/faultfs, every operation 1 ms late (an NFS round trip).
//
//   - A read open on B goes on to the last byte while the file is
//     removed by another host and every access to it answers ESTALE, as
//     NFS does to a host whose file another host unlinked.
//   - A lookup the share answers with ESTALE is a miss, not an error.
//   - EIO from the share fails the open (never wrong bytes); once the
//     share answers again the block reads exact.
func TestSharedFaults(t *testing.T) {
	backing := sharedDir(t)
	ffs := faultfs.Mount(t, backing)
	ffs.Inject(faultfs.Fault{Op: faultfs.OpAny, Delay: time.Millisecond})
	a, b := sharedDaemon(t, ffs.Dir()), sharedDaemon(t, ffs.Dir())
	ids := testIDs("faults", 3)
	if err := os.Mkdir(a.path("m"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if err := writeVerdict(blockPath(a.Mnt, "m", id), bigBlock(id, 4<<20)); err != nil {
			t.Fatal(err)
		}
	}
	flushAll(t, a)

	// 1. A read across a remote delete and ESTALE: on B (the block fits
	// in memory) and on C (2 MiB of memory: it does not).
	c := mountUCM(t, sharedMount("nfs:"+ffs.Dir(), "--memory", "2MiB"))
	want := bigBlock(ids[0], 4<<20)
	var files []*os.File
	for _, d := range []*daemon{b, c} {
		var f *os.File
		waitUntil(t, "the block opens on "+d.Mnt, func() bool {
			var err error
			f, err = os.Open(blockPath(d.Mnt, "m", ids[0]))
			return err == nil
		})
		defer f.Close()
		files = append(files, f)
	}
	heads := make([][]byte, len(files))
	for i, f := range files {
		heads[i] = make([]byte, 64<<10)
		if _, err := io.ReadFull(f, heads[i]); err != nil {
			t.Fatal(err)
		}
	}
	ffs.Inject(faultfs.Fault{Op: faultfs.OpAny, Errno: syscall.ESTALE, PathContains: ids[0]})
	if err := os.Remove(blockPath(backing, "m", ids[0])); err != nil { // another host's unlink
		t.Fatal(err)
	}
	for i, f := range files {
		rest, err := io.ReadAll(f)
		if err != nil {
			t.Fatalf("read %d after the remote delete: %v", i, err)
		}
		if got := append(heads[i], rest...); !bytes.Equal(got, want) {
			t.Fatalf("read %d across the remote delete: %d bytes, differ from the %d written", i, len(got), len(want))
		}
	}

	// 2. ESTALE on a lookup is a miss.
	waitUntil(t, "the removed block is a miss on B", func() bool {
		_, err := os.Stat(blockPath(b.Mnt, "m", ids[0]))
		return errors.Is(err, os.ErrNotExist)
	})

	// 3. EIO fails the open; the block reads exact once the share heals.
	ffs.Inject(faultfs.Fault{Op: faultfs.OpRead, Errno: syscall.EIO, PathContains: ids[1]})
	if _, err := os.ReadFile(blockPath(b.Mnt, "m", ids[1])); !errors.Is(err, syscall.EIO) {
		t.Errorf("read of a block the share fails with EIO: %v, want EIO", err)
	}
	ffs.Clear()
	ffs.Inject(faultfs.Fault{Op: faultfs.OpAny, Delay: time.Millisecond})
	got, err := os.ReadFile(blockPath(b.Mnt, "m", ids[1]))
	if err != nil || !bytes.Equal(got, bigBlock(ids[1], 4<<20)) {
		t.Fatalf("read after the share healed: %v (%d bytes)", err, len(got))
	}
}
