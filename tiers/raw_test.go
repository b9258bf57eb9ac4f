package tiers

import (
	"bytes"
	"context"
	"crypto/md5"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/ucmfs/ucmfs/format"
	"golang.org/x/sys/unix"
)

// rawBlock is raw block n of model at shard width w, with its payload.
func rawBlock(model string, n, w, size int) (format.Key, []byte) {
	id := format.ID(md5.Sum(fmt.Appendf(nil, "raw/%s/%d", model, n)))
	data := bytes.Repeat([]byte{byte(n), byte(n >> 8), 0x5a}, size/3+1)[:size]
	return format.Key{Model: model, ID: id, Kind: format.RawKind(w)}, data
}

// TestRawTierAdopt: a UCM PosixStore directory (shards of widths 0, 2 and
// 3, raw files, a leftover .tmp) serves as a tier: the rebuild adopts
// every raw file under its width, reads return the bytes, the first read
// checks and records the CRC, fsck passes it; a raw block published
// through the stack lands as <tier>/<model>/<shard>/<id>, byte for byte,
// with its CRC in the xattr; an empty raw block is published (UCM takes
// a file's existence as the block) and fsck passes it.
func TestRawTierAdopt(t *testing.T) {
	dir := t.TempDir()
	const model = "ucm"
	var keys []format.Key
	datas := map[format.Key][]byte{}
	for i, w := range []int{0, 2, 3, 3} {
		k, d := rawBlock(model, i, w, 4096+i)
		p := filepath.Join(dir, k.Path())
		if err := os.MkdirAll(filepath.Dir(p), 0o774); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, d, 0o644); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
		datas[k] = d
	}
	left := filepath.Join(dir, keys[2].Path()+".tmp")
	if err := os.WriteFile(left, []byte("half"), 0o644); err != nil {
		t.Fatal(err)
	}
	if rep, err := Fsck(dir, FsckOptions{}); err != nil || rep.Bad+rep.Errors != 0 || rep.OK != 4 || rep.Leftovers != 1 {
		t.Fatalf("fsck of a UCM directory: %+v %v", rep, err)
	}
	s := newTestStack(t, 16<<20, dir, StackConfig{})
	if w := s.RawWidths(model); !slices.Equal(w, []int{0, 2, 3}) {
		t.Errorf("raw widths of the adopted directory: %v, want [0 2 3]", w)
	}
	if w := s.RawWidths("other"); len(w) != 0 {
		t.Errorf("raw widths of a model with no files: %v", w)
	}
	for _, k := range keys {
		if got := readAll(t, s, k); !bytes.Equal(got, datas[k]) {
			t.Errorf("%s: %d bytes read, want the file's %d", k, len(got), len(datas[k]))
		}
		if crc, has, err := s.CRC(k); err != nil || !has || crc != format.CRC32C(datas[k]) {
			t.Errorf("%s: CRC %08x %v %v", k, crc, has, err)
		}
	}

	k, d := rawBlock(model, 9, 3, 2<<20)
	if _, err := s.Put(k, d, true); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, model, k.ID.String()[:3], k.ID.String())
	if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, d) {
		t.Fatalf("the tier file %s: %v, equal %v", p, err, bytes.Equal(got, d))
	}
	var buf [8]byte
	if n, err := unix.Getxattr(p, format.CRCXattr, buf[:]); err != nil || string(buf[:n]) != fmt.Sprintf("%08x", format.CRC32C(d)) {
		t.Errorf("crc xattr of the tier file: %q %v", buf[:n], err)
	}
	empty, _ := rawBlock(model, 10, 2, 0)
	if _, err := s.Put(empty, nil, false); err != nil {
		t.Errorf("an empty raw block: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if rep, err := Fsck(dir, FsckOptions{}); err != nil || rep.Bad+rep.Errors != 0 || rep.OK != 6 {
		t.Fatalf("fsck after a raw publish: %+v %v", rep, err)
	}
}
