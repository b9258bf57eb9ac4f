package tiers

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ucmfs/ucmfs/format"
)

func TestStackWriteBackIsPlainStore(t *testing.T) {
	dir := t.TempDir()
	s := newTestStack(t, 8<<20, dir, StackConfig{})
	var keys []format.Key
	var datas [][]byte
	for i := 0; i < 20; i++ {
		k, data := testBlock("m", i, 100_000+i)
		if _, err := s.Put(k, data, false); err != nil {
			t.Fatal(err)
		}
		keys, datas = append(keys, k), append(datas, data)
	}
	if err := s.FlushAll(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	for i, k := range keys {
		got, err := os.ReadFile(filepath.Join(dir, k.Path()))
		if err != nil {
			t.Fatal(err)
		}
		mustEqual(t, "tier file "+k.Path(), got, datas[i])
		bi, err := s.Stat(k)
		if err != nil || bi.Dirty || len(bi.Holders) != 2 {
			t.Fatalf("stat %s after flush: %+v %v", k, bi, err)
		}
	}
}

func TestStackPublishVerdicts(t *testing.T) {
	s := newTestStack(t, 8<<20, t.TempDir(), StackConfig{})
	k, data := testBlock("m", 1, 4096)
	if _, err := s.Put(k, data, false); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(k, data, false); !errors.Is(err, ErrExist) {
		t.Fatalf("second put: %v, want ErrExist", err)
	}
	bad := append([]byte(nil), data...)
	bad[100] ^= 1 // CRC flagged in the header no longer matches
	k2, _ := testBlock("m", 2, 4096)
	copy(bad[8:24], k2.ID[:])
	if _, err := s.Put(k2, bad, false); !errors.Is(err, ErrInvalid) {
		t.Fatalf("corrupt put: %v, want ErrInvalid", err)
	}
	if s.Has(k2) {
		t.Fatal("rejected block is visible")
	}
	// A header whose id does not match the name.
	k3, _ := testBlock("m", 3, 4096)
	if _, err := s.Put(k3, data, false); !errors.Is(err, ErrInvalid) {
		t.Fatalf("mismatched id: %v, want ErrInvalid", err)
	}
	// A sidecar without its block.
	rk := format.Key{Model: "m", ID: k3.ID, Kind: format.Repr}
	if _, err := s.Put(rk, testRepr(k3.ID), false); !errors.Is(err, ErrNotFound) {
		t.Fatalf("orphan sidecar: %v, want ErrNotFound", err)
	}
	if st := s.Stats(); st.Rejected != 2 || st.Published != 1 {
		t.Fatalf("stats: %+v", st)
	}
}

// testRepr builds a valid kind-0 sidecar for id: 1 layer, 1 head, dim 4.
func testRepr(id format.ID) []byte {
	h := format.ReprHeader{ID: id, Kind: format.ReprMean, Dtype: format.Float32, NumLayers: 1, NumKVHeads: 1, Rows: 1, Dim: 4}
	return format.NewRepr(h, make([]byte, 16))
}

func TestStackRemoveDropsEveryTierAndSidecar(t *testing.T) {
	dir := t.TempDir()
	s := newTestStack(t, 8<<20, dir, StackConfig{})
	k, data := testBlock("m", 1, 4096)
	if _, err := s.Put(k, data, true); err != nil {
		t.Fatal(err)
	}
	rk := format.Key{Model: "m", ID: k.ID, Kind: format.Repr}
	if _, err := s.Put(rk, testRepr(k.ID), true); err != nil {
		t.Fatal(err)
	}
	h, err := s.Open(k)
	if err != nil {
		t.Fatal(err)
	}
	defer h.File.Close()
	if err := s.Remove(k); err != nil {
		t.Fatal(err)
	}
	for _, key := range []format.Key{k, rk} {
		if s.Has(key) {
			t.Fatalf("%s still held after remove", key)
		}
		if _, err := os.Stat(filepath.Join(dir, key.Path())); !os.IsNotExist(err) {
			t.Fatalf("%s still on disk: %v", key, err)
		}
	}
	buf := make([]byte, len(data))
	if _, err := h.File.ReadAt(buf, 0); err != nil {
		t.Fatalf("open reader lost its data: %v", err)
	}
	mustEqual(t, "reader after unlink", buf, data)
	if err := s.Remove(k); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second remove: %v", err)
	}
}

func TestStackRestartFallsThroughAndPromotes(t *testing.T) {
	dir := t.TempDir()
	k, data := testBlock("m", 1, 1<<20)
	s1 := newTestStack(t, 8<<20, dir, StackConfig{})
	if _, err := s1.Put(k, data, true); err != nil {
		t.Fatal(err)
	}
	if err := s1.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	s2 := newTestStack(t, 8<<20, dir, StackConfig{})
	bi, err := s2.Stat(k)
	if err != nil || bi.Holders[0] != "nvme" {
		t.Fatalf("after restart: %+v %v", bi, err)
	}
	h, err := s2.Open(k)
	if err != nil {
		t.Fatal(err)
	}
	h.File.Close()
	if h.Tier != "nvme" {
		t.Fatalf("first read served from %s, want the nvme file (promotion is off the read path)", h.Tier)
	}
	waitPromoted(t, s2, k)
	h, err = s2.Open(k)
	if err != nil {
		t.Fatal(err)
	}
	h.File.Close()
	if h.Tier != "mem" {
		t.Fatalf("read after the promotion served from %s, want mem", h.Tier)
	}
	mustEqual(t, "promoted", readAll(t, s2, k), data)
	if st := s2.Stats(); st.Promotions != 1 {
		t.Fatalf("promotions = %d", st.Promotions)
	}
}

func TestStackCorruptLowerCopyIsAMiss(t *testing.T) {
	dir := t.TempDir()
	k, data := testBlock("m", 1, 64<<10)
	s1 := newTestStack(t, 8<<20, dir, StackConfig{})
	if _, err := s1.Put(k, data, true); err != nil {
		t.Fatal(err)
	}
	s1.Close(context.Background())
	p := filepath.Join(dir, k.Path())
	os.Chmod(p, 0o644)
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte{data[1000] ^ 0xff}, 1000) // flip payload bits on disk
	f.Close()
	s2 := newTestStack(t, 8<<20, dir, StackConfig{})
	if _, err := s2.Open(k); !errors.Is(err, ErrNotFound) {
		t.Fatalf("open of a corrupt block: %v, want ErrNotFound", err)
	}
	st := s2.Stats()
	if st.CRCErrors != 1 || st.Quarantined != 1 {
		t.Fatalf("stats after corruption: %+v", st)
	}
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Fatalf("corrupt file still under its name: %v", err)
	}
}

func TestStackPinnedStaysInMemory(t *testing.T) {
	s := newTestStack(t, 1<<20, t.TempDir(), StackConfig{})
	k, data := testBlock("m", 0, 300<<10)
	if _, err := s.Put(k, data, true); err != nil {
		t.Fatal(err)
	}
	if err := s.Pin(k, true); err != nil {
		t.Fatal(err)
	}
	for i := 1; i < 20; i++ { // 19 × 300 KiB through 1 MiB of memory
		kk, dd := testBlock("m", i, 300<<10)
		if _, err := s.Put(kk, dd, false); err != nil {
			t.Fatal(err)
		}
	}
	bi, err := s.Stat(k)
	if err != nil || !bi.Pinned || bi.Holders[0] != "mem" {
		t.Fatalf("pinned block: %+v %v", bi, err)
	}
}

func TestStackMemoryOnly(t *testing.T) {
	s := newTestStack(t, 1<<20, "", StackConfig{RoomWait: 100 * time.Millisecond})
	for i := 0; i < 10; i++ { // 10 × 300 KiB: older blocks are evicted
		k, d := testBlock("m", i, 300<<10)
		if _, err := s.Put(k, d, false); err != nil {
			t.Fatal(err)
		}
	}
	if u := s.mem.Usage(); u.Used > u.Capacity {
		t.Fatalf("memory over capacity: %+v", u)
	}
	k, d := testBlock("m", 9, 300<<10)
	mustEqual(t, "newest block", readAll(t, s, k), d)
}

func TestStackPublishTimeSurvivesCopies(t *testing.T) {
	dir := t.TempDir()
	s := newTestStack(t, 8<<20, dir, StackConfig{})
	k, data := testBlock("m", 1, 4096)
	info, err := s.Put(k, data, true)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	fi, err := os.Stat(filepath.Join(dir, k.Path()))
	if err != nil {
		t.Fatal(err)
	}
	if !fi.ModTime().Equal(info.MTime) {
		t.Fatalf("write-back changed the publish time: %v, published %v", fi.ModTime(), info.MTime)
	}
	s.Close(context.Background())
	s2 := newTestStack(t, 8<<20, dir, StackConfig{})
	readAll(t, s2, k) // queues a promotion
	waitPromoted(t, s2, k)
	bi, err := s2.Stat(k)
	if err != nil || bi.Holders[0] != "mem" || !bi.MTime.Equal(info.MTime) {
		t.Fatalf("after promotion: %+v %v, published %v", bi, err, info.MTime)
	}
}

func TestStackShardKeys(t *testing.T) {
	dir := t.TempDir()
	s := newTestStack(t, 8<<20, dir, StackConfig{})
	want := map[byte]map[format.Key]bool{}
	for i := 0; i < 64; i++ {
		k, data := testBlock("m", i, 1024)
		if _, err := s.Put(k, data, i%2 == 0); err != nil { // half also on disk
			t.Fatal(err)
		}
		if want[k.ID[0]] == nil {
			want[k.ID[0]] = map[format.Key]bool{}
		}
		want[k.ID[0]][k] = true
	}
	check := func(when string) {
		for shard, keys := range want {
			got := s.ShardKeys("m", shard)
			if len(got) != len(keys) {
				t.Fatalf("%s: shard %02x: %d keys, want %d", when, shard, len(got), len(keys))
			}
			for _, k := range got {
				if !keys[k] {
					t.Fatalf("%s: shard %02x lists %s", when, shard, k)
				}
			}
		}
	}
	check("the durable half in both tiers")
	s.mem.EvictClean(1 << 40)
	check("the durable half on disk only")
}
