package fs

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"sort"
	"strconv"
	"syscall"
	"testing"

	"github.com/pkg/xattr"
	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/tiers"
)

// xattrWant is the expected user.ucm.* of the test block and sidecar.
func xattrWant(k format.Key, size int, hits int) map[string]string {
	return map[string]string{
		"hash": k.ID.String(), "model": k.Model, "num_layers": "2", "block_size": "4",
		"dtype": "bfloat16", "num_kv_heads": "0", "head_dim": "0", "tensors_per_layer": "2",
		"payload_bytes": strconv.Itoa(size - 64), "hits": strconv.Itoa(hits), "repr": "mean", "pinned": "0",
	}
}

// TestXattrsNodes reads a block's and a sidecar's attributes through the
// node methods, without a kernel.
func TestXattrsNodes(t *testing.T) {
	st := newTestStack(t)
	s := testState(t, st, Options{Logger: testLogger()})
	k, d := testBlock(testModel, 1, 4096)
	put(t, st, k, d)
	rk, rd := testRepr(k)
	put(t, st, rk, rd)
	b := newStoredNode(s, k, 0).(*blockFile)
	for name, want := range xattrWant(k, len(d), 0) {
		if got, err := b.xattrs().Get(name); err != nil || got != want {
			t.Errorf("%s = %q (%v), want %q", name, got, err, want)
		}
	}
	crc, _ := b.xattrs().Get("crc32c")
	if want := fmt.Sprintf("%08x", format.CRC32C(d[64:])); crc != want {
		t.Errorf("crc32c = %q, want %q", crc, want)
	}
	if v, _ := b.xattrs().Get("state"); v != "dirty" && v != "clean" {
		t.Errorf("state = %q", v)
	}
	if v, _ := b.xattrs().Get("tiers"); v != "mem" && v != "mem,nvme" {
		t.Errorf("tiers = %q", v)
	}
	r := newStoredNode(s, rk, 0).(*reprFile)
	for name, want := range map[string]string{"kind": "mean", "rows": "1", "dim": "8", "num_kv_heads": "1", "param": "0", "payload_bytes": strconv.Itoa(len(rd) - 64)} {
		if got, err := r.xattrs().Get(name); err != nil || got != want {
			t.Errorf("sidecar %s = %q (%v), want %q", name, got, err, want)
		}
	}
	buf := make([]byte, 4)
	if _, errno := b.Getxattr(context.Background(), "user.ucm.hash", buf); errno != syscall.ERANGE {
		t.Errorf("short buffer: %v, want ERANGE", errno)
	}
	if n, errno := b.Getxattr(context.Background(), "user.ucm.hash", nil); errno != 0 || n != 32 {
		t.Errorf("size probe: %d %v", n, errno)
	}
	m := newModelNode(s, testModel, 0)
	u := s.store.Models().Usage(testModel)
	if u.Blocks != 1 || u.Bytes != int64(len(d)+len(rd)) {
		t.Errorf("usage %+v", u)
	}
	if errno := m.Setxattr(context.Background(), "user.ucm.quota", []byte("12345"), 0); errno != 0 {
		t.Fatal(errno)
	}
	if v, _ := m.xattrs(context.Background()).Get("quota"); v != "12345" {
		t.Errorf("quota = %q", v)
	}
}

// TestXattrsKernel reads, lists and writes attributes through a mount.
func TestXattrsKernel(t *testing.T) {
	modes(t, func(t *testing.T, m *testMount) {
		k, d := testBlock(testModel, 1, 4096)
		if err := os.MkdirAll(m.path(testModel), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := writeFile(m.keyPath(k), d); err != nil {
			t.Fatal(err)
		}
		rk, rd := testRepr(k)
		if err := writeFile(m.keyPath(rk), rd); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 3; i++ {
			if _, err := os.ReadFile(m.keyPath(k)); err != nil {
				t.Fatal(err)
			}
		}
		p := m.keyPath(k)
		for name, want := range xattrWant(k, len(d), 3) {
			got, err := xattr.Get(p, "user.ucm."+name)
			if err != nil || string(got) != want {
				t.Errorf("%s = %q (%v), want %q", name, got, err, want)
			}
		}
		names, err := xattr.List(p)
		if err != nil {
			t.Fatal(err)
		}
		want := append([]string(nil), m.srv.state.store.FileAttrs(k, nil).Names...)
		for i := range want {
			want[i] = "user.ucm." + want[i]
		}
		sort.Strings(names)
		sort.Strings(want)
		if !equalStrings(names, want) {
			t.Errorf("list %v, want %v", names, want)
		}
		if err := xattr.Set(p, "user.ucm.pinned", []byte("1")); err != nil {
			t.Fatalf("pin: %v", err)
		}
		if bi, _ := m.st.Stat(k); !bi.Pinned {
			t.Fatal("stack does not have the block pinned")
		}
		if v, _ := xattr.Get(p, "user.ucm.pinned"); string(v) != "1" {
			t.Fatalf("pinned reads %q", v)
		}
		if err := xattr.Set(p, "user.ucm.pinned", []byte("0")); err != nil {
			t.Fatal(err)
		}
		mp := m.path(testModel)
		for name, want := range map[string]string{"blocks": "1", "bytes": strconv.Itoa(len(d) + len(rd)), "quota": "0"} {
			if got, err := xattr.Get(mp, "user.ucm."+name); err != nil || string(got) != want {
				t.Errorf("model %s = %q (%v), want %q", name, got, err, want)
			}
		}
		if v, err := xattr.Get(m.keyPath(rk), "user.ucm.kind"); err != nil || string(v) != "mean" {
			t.Errorf("sidecar kind %q %v", v, err)
		}
	})
}

// TestQuota: a publish that would take a model past its quota fails
// with EDQUOT at close and stores nothing.
func TestQuota(t *testing.T) {
	modes(t, func(t *testing.T, m *testMount) {
		os.Mkdir(m.path(testModel), 0o755)
		k1, d1 := testBlock(testModel, 1, 4096)
		k2, d2 := testBlock(testModel, 2, 4096)
		if err := xattr.Set(m.path(testModel), "user.ucm.quota", []byte(strconv.Itoa(len(d1)+len(d2)/2))); err != nil {
			t.Fatal(err)
		}
		if err := writeFile(m.keyPath(k1), d1); err != nil {
			t.Fatalf("first block: %v", err)
		}
		if err := writeFile(m.keyPath(k2), d2); errnoOf(err) != syscall.EDQUOT {
			t.Fatalf("second block: %v, want EDQUOT", err)
		}
		if m.st.Has(k2) {
			t.Fatal("the refused block was stored")
		}
		if err := xattr.Set(m.path(testModel), "user.ucm.quota", []byte("0")); err != nil {
			t.Fatal(err)
		}
		if err := writeFile(m.keyPath(k2), d2); err != nil {
			t.Fatalf("after lifting the quota: %v", err)
		}
	})
}

// TestXattrCRCWithoutHeaderCRC: a block whose writer stated no CRC still
// shows its payload CRC-32C in user.ucm.crc32c, on a memory-only stack
// where no write-back ever computes it.
func TestXattrCRCWithoutHeaderCRC(t *testing.T) {
	st, err := tiers.New(tiers.StackConfig{Logger: testLogger()}, tiers.MemConfig{Capacity: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close(context.Background()) })
	k, d := testBlock(testModel, 7, 4096)
	binary.LittleEndian.PutUint32(d[48:], 0) // no payload_crc32c
	binary.LittleEndian.PutUint32(d[52:], 0) // flag bit 0 cleared
	put(t, st, k, d)
	b := newStoredNode(testState(t, st, Options{Logger: testLogger()}), k, 0).(*blockFile)
	crc, err := b.xattrs().Get("crc32c")
	if want := fmt.Sprintf("%08x", format.CRC32C(d[64:])); err != nil || crc != want {
		t.Fatalf("crc32c = %q (%v), want %q", crc, err, want)
	}
}
