package fs

import (
	"bytes"
	"crypto/md5"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/ucmfs/ucmfs/format"
	"golang.org/x/sys/unix"
)

// TestRawModelControl: on a ucm-posix model, .ucm/gpu loads a raw block
// whole (the file is the payload) from memory and from the directory
// tier, dumps a region's bytes as a raw block of the model's shard width
// that reads back through the mount, refuses a layer range, and
// .ucm/prefetch and .ucm/lookup see raw blocks.
func TestRawModelControl(t *testing.T) {
	m := newGPUMount(t, nil, Options{})
	model := "raw-gpu"
	if err := os.Mkdir(m.path(model), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Setxattr(m.path(model), "user.ucm.layout", []byte("ucm-posix"), 0); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(m.path(model, "ab"), 0o774); err != nil {
		t.Fatal(err)
	}
	raw := func(n, size int) (format.Key, []byte) {
		sum := md5.Sum(fmt.Appendf(nil, "raw/%d", n))
		sum[0] = 0xab // in shard ab
		b := bytes.Repeat([]byte{byte(n), 0x5a, byte(n >> 3)}, size/3+1)[:size]
		return format.Key{Model: model, ID: format.ID(sum), Kind: format.RawKind(2)}, b
	}
	k0, b0 := raw(0, 3000)
	k1, b1 := raw(1, 5000)
	region, c, r := loadSetup(t, m, model, k0, b0, k1, b1)
	if a := c.mustOK(fmt.Sprintf("load %s %s %s:7 %s:4000", r, model, k0.ID, k1.ID)); a != fmt.Sprintf("ok loaded=2 bytes=%d", len(b0)+len(b1)) {
		t.Fatalf("load: %q", a)
	}
	region.check("after the load")
	if a := c.ask(fmt.Sprintf("load %s %s %s:7:0-1", r, model, k0.ID)); errnoOfAnswer(a) != "EINVAL" {
		t.Errorf("a layer range of a raw block: %q, want EINVAL", a)
	}

	k2, b2 := raw(2, 4096)
	region.write(20000, b2)
	if a := c.mustOK(fmt.Sprintf("dump %s %s %s:20000:%d", r, model, k2.ID, len(b2))); a != "ok dumped=1 existing=0" {
		t.Fatalf("dump: %q", a)
	}
	got, err := os.ReadFile(m.path(model, "ab", k2.ID.String()))
	if err != nil || !bytes.Equal(got, b2) {
		t.Fatalf("the dumped raw block through the mount: %v (equal %v)", err, bytes.Equal(got, b2))
	}
	absent, _ := raw(3, 1)
	if a := openCtl(t, m, "prefetch").ask(fmt.Sprintf("%s %s %s", model, k1.ID, absent.ID)); a != "ok queued=1 missing=1" {
		t.Errorf("prefetch: %q", a)
	}
	want := "ok 3 1110"
	if a := openCtl(t, m, "lookup").mustOK(fmt.Sprintf("exists %s %s %s %s %s", model, k0.ID, k1.ID, k2.ID, absent.ID)); a != want {
		t.Errorf("lookup: %q, want %q", a, want)
	}
	// The hybrid prefix hit asks the model's layout too: two raw blocks of
	// a full-attention group of block size 16 are a 32-token hit.
	if a := openCtl(t, m, "lookup").mustOK(fmt.Sprintf("hybrid 100 %s 16 3 %s %s %s", model, k0.ID, k1.ID, absent.ID)); a != "ok 32 0-2" {
		t.Errorf("hybrid lookup: %q, want ok 32 0-2", a)
	}
	if _, err := os.Stat(filepath.Join(m.path(model), "ab", k0.ID.String()+".bin")); err == nil {
		t.Error("a .bin name resolves in a ucm-posix model")
	}
}

// TestFilesModelGPU: on a files model, .ucm/gpu names files by their
// paths (a path may hold ':'): a load copies a File whole from memory and
// from the directory tier, a dump publishes a region's bytes as a File
// that reads back through the mount.
func TestFilesModelGPU(t *testing.T) {
	m := newGPUMount(t, nil, Options{})
	model := "files-gpu"
	if err := os.Mkdir(m.path(model), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Setxattr(m.path(model), "user.ucm.layout", []byte("files"), 0); err != nil {
		t.Fatal(err)
	}
	k0, b0 := format.FileKey(model, "m_r0/abc/de_g0/aa.bin"), bytes.Repeat([]byte{1, 2, 3}, 1000)
	k1, b1 := format.FileKey(model, "lmcache@0x0@ff.data"), bytes.Repeat([]byte{7, 8}, 2500)
	region, c, r := loadSetup(t, m, model, k0, b0, k1, b1)
	if a := c.mustOK(fmt.Sprintf("load %s %s %s:7 %s:4000:file", r, model, k0.Name, k1.Name)); a != fmt.Sprintf("ok loaded=2 bytes=%d", len(b0)+len(b1)) {
		t.Fatalf("load: %q", a)
	}
	region.check("after the load")
	if a := c.ask(fmt.Sprintf("load %s %s ../x:0", r, model)); errnoOfAnswer(a) != "EINVAL" {
		t.Errorf("a path out of the model: %q, want EINVAL", a)
	}
	b2 := bytes.Repeat([]byte{9}, 4096)
	region.write(20000, b2)
	if a := c.mustOK(fmt.Sprintf("dump %s %s new/page.bin:20000:%d", r, model, len(b2))); a != "ok dumped=1 existing=0" {
		t.Fatalf("dump: %q", a)
	}
	if got, err := os.ReadFile(m.path(model, "new", "page.bin")); err != nil || !bytes.Equal(got, b2) {
		t.Fatalf("the dumped File through the mount: %v (equal %v)", err, bytes.Equal(got, b2))
	}
}

// loadSetup publishes b0 as k0 (kept in memory) and b1 as k1 (on the
// directory tier only) in model, and registers a 64 KiB simulated region
// that expects them at 7 and 4000: what a load test of a layout asks.
func loadSetup(t *testing.T, m *testMount, model string, k0 format.Key, b0 []byte, k1 format.Key, b1 []byte) (*simRegion, *ctl, string) {
	t.Helper()
	put(t, m.st, k0, b0)
	put(t, m.st, k1, b1)
	openCtl(t, m, "flush").mustOK("model " + model)
	if err := m.st.Evict(k1); err != nil { // on the directory tier only
		t.Fatal(err)
	}
	region := newSimRegion(t, 64<<10)
	c := openCtl(t, m, "gpu")
	r := region.register(c)
	region.expect(7, b0)
	region.expect(4000, b1)
	return region, c, r
}
