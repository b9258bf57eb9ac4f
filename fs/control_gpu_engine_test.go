package fs

import (
	"bytes"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/gpu"
	"github.com/ucmfs/ucmfs/gpu/fdpass"
	"github.com/ucmfs/ucmfs/internal/engine"
	"golang.org/x/sys/unix"
)

// TestGPUEngineKV: an engine process on the stand-in driver's third GPU
// (FAKECUDA_VISIBLE_DEVICES=2: its GPU 0) exports one segment holding
// per-layer K and V tensors; it registers each tensor by UUID, and loads
// scatter whole blocks and layer ranges over them, K and V halves
// apart, in one request; the engine finds every byte where it belongs
// and its guard bytes everywhere else. The same memory named by the
// daemon's GPU 0 is EXDEV; requests that cannot split into K and V are
// EINVAL and copy nothing.
func TestGPUEngineKV(t *testing.T) {
	m, lib := cudaMount(t)
	p := startEngine(t, "ipc", testKV.SegmentSize(), nil, engine.EnvLib+"="+lib, "FAKECUDA_VISIBLE_DEVICES=2")
	c := openCtl(t, m, "gpu")
	target := registerKV(c, p)
	keys := []string{putKV(t, m, 1).ID.String(), putKV(t, m, 2).ID.String(), putKV(t, m, 3).ID.String()}
	slot := func(b int) int64 { return int64(b) * testKV.BlockBytes }
	singles, batches := fakeCounter(t, lib, 0), fakeCounter(t, lib, 1)
	c.mustOK(fmt.Sprintf("load %s %s %s:%d %s:%d %s:%d:1-2", target, gpuModel, keys[0], slot(0), keys[1], slot(5), keys[2], slot(7)))
	// 20 pieces in 16 regions: one batch call per stream of the GPU, no single copy.
	if n, m := fakeCounter(t, lib, 1)-batches, fakeCounter(t, lib, 0)-singles; n < 1 || n > gpu.DefaultStreams || m != 0 {
		t.Errorf("a K/V load made %d batch calls and %d single copies, want 1 to %d and 0", n, m, gpu.DefaultStreams)
	}
	loadedKV(p, 1, 0, 0, gpuLayers-1)
	loadedKV(p, 2, 5, 0, gpuLayers-1)
	loadedKV(p, 3, 7, 1, 2)
	verifyEngine(t, p, "after a K/V load")

	kOnly := target[:strings.IndexByte(target, '/')]
	two := strings.Join(strings.Split(kOnly, ",")[:2], ",")
	for _, tc := range []struct{ req, errno string }{
		{fmt.Sprintf("register cuda %s 4096 device=0", p.Handle), "EXDEV"},
		{fmt.Sprintf("register cuda %s 4096 uuid=%s device=2", p.Handle, p.UUID), "EINVAL"},
		{fmt.Sprintf("register cuda %s 4096 uuid=GPU-00000000-0000-0000-0000-000000000000", p.Handle), "ENODEV"},
		{fmt.Sprintf("load %s %s %s:0:file", target, gpuModel, keys[0]), "EINVAL"},
		{fmt.Sprintf("load %s/%s %s %s:0", two, two, gpuModel, keys[0]), "EINVAL"},
		{fmt.Sprintf("load %s/%s %s %s:0", kOnly, two, gpuModel, keys[0]), "EINVAL"},
		{fmt.Sprintf("load %s, %s %s:0", target, gpuModel, keys[0]), "EINVAL"},
		{fmt.Sprintf("load %s %s %s:0 %s:%d", target, gpuModel, keys[0], keys[1], slot(8)), "EINVAL"},
		{fmt.Sprintf("load 999/%s %s %s:0", kOnly, gpuModel, keys[0]), "EBADF"},
	} {
		if a := c.ask(tc.req); errnoOfAnswer(a) != tc.errno {
			t.Errorf("%q: %q, want err %s", clip([]byte(tc.req)), a, tc.errno)
		}
	}
	verifyEngine(t, p, "after refused requests")
	st := readStats(t, m)
	// GPU 0's context comes from the refused device=0 register.
	if st.GPU == nil || !slices.Contains(st.GPU.Contexts, 2) || st.GPU.Resets != 0 || st.GPURegions != 2*gpuLayers {
		t.Errorf("stats: %+v, regions %d; want a context on GPU 2, no reset, %d regions", st.GPU, st.GPURegions, 2*gpuLayers)
	}
}

// TestGPUOpaqueLayers: a layer range of an opaque block (no layer
// layout) is refused; its payload loads whole.
func TestGPUOpaqueLayers(t *testing.T) {
	m := newGPUMount(t, nil, Options{})
	k, _ := gpuBlock(9, 100)
	b := format.NewBlock(format.BlockHeader{ID: k.ID, NumLayers: 2, BlockSize: 16, Dtype: format.Float32,
		Flags: format.FlagOpaque}, make([]byte, 1000))
	if err := writeFile(m.keyPath(k), b); err != nil {
		t.Fatal(err)
	}
	region := newSimRegion(t, 4096)
	c := openCtl(t, m, "gpu")
	r := region.register(c)
	if a := c.ask(fmt.Sprintf("load %s %s %s:0:0-1", r, gpuModel, k.ID)); errnoOfAnswer(a) != "EINVAL" || !strings.Contains(a, "opaque") {
		t.Errorf("layers of an opaque block: %q", a)
	}
	region.check("after a refused load")
	c.mustOK(fmt.Sprintf("load %s %s %s:8", r, gpuModel, k.ID))
	region.expect(8, b[format.HeaderSize:])
	region.check("after its payload was loaded")
}

// TestGPUEngineVMM: engines pass their memory's descriptor over
// .ucm/gpu.sock (a link to the socket outside the mount) and register it
// with the token they got: VMM memory on the stand-in driver's second
// GPU, and a simulated engine's shared-memory file; loads land where the
// engine expects. A token is good once; an unknown one is ENOENT.
func TestGPUEngineVMM(t *testing.T) {
	t.Run("cuda", func(t *testing.T) {
		m, lib := cudaMount(t)
		p := startEngine(t, "vmm", 256<<10, nil, engine.EnvLib+"="+lib, "FAKECUDA_VISIBLE_DEVICES=1",
			engine.EnvSocket+"="+m.path(".ucm", "gpu.sock"))
		vmmLoads(t, m, p, fmt.Sprintf("uuid=%s", p.UUID))
	})
	t.Run("sim", func(t *testing.T) {
		sock := t.TempDir() + "/gpu.sock"
		m := newGPUMount(t, nil, Options{GPUSocket: sock})
		if target, err := os.Readlink(m.path(".ucm", "gpu.sock")); err != nil || target != sock {
			t.Fatalf(".ucm/gpu.sock links to %q (%v), want %s", target, err, sock)
		}
		p := startEngine(t, "sim", 256<<10, nil, engine.EnvSocket+"="+m.path(".ucm", "gpu.sock"))
		vmmLoads(t, m, p, "")
	})
}

// vmmLoads registers the engine's passed descriptor and loads into it.
func vmmLoads(t *testing.T, m *testMount, p *engine.Proc, opts string) {
	t.Helper()
	if p.Token == "" {
		t.Fatal("the engine got no token for its descriptor")
	}
	c := openCtl(t, m, "gpu")
	r := strings.TrimPrefix(c.mustOK(fmt.Sprintf("register vmm %s %d offset=4096 %s", p.Token, 64<<10, opts)), "ok region=")
	k := putKV(t, m, 4)
	c.mustOK(fmt.Sprintf("load %s %s %s:100 %s:30000:1", r, gpuModel, k.ID, k.ID))
	for l := range gpuLayers {
		for kv := range 2 {
			p.Wrote(engine.Write{Off: 4096 + 100 + testKV.PayloadOffset(l, kv), Len: int(testKV.BlockBytes), Seed: kvSeed(4, l, kv)})
		}
	}
	for kv := range 2 {
		p.Wrote(engine.Write{Off: 4096 + 30000 + int64(kv)*testKV.BlockBytes, Len: int(testKV.BlockBytes), Seed: kvSeed(4, 1, kv)})
	}
	verifyEngine(t, p, "after loads into a passed descriptor's memory")
	for _, req := range []string{"register vmm " + p.Token + " 4096", "register vmm 999999 4096"} {
		if a := c.ask(req); errnoOfAnswer(a) != "ENOENT" {
			t.Errorf("%q: %q, want err ENOENT", req, a)
		}
	}
	c.mustOK("unregister " + r)
}

// TestGPUEngineDies: an engine is killed while loads into its memory
// run. On the stand-in driver the next copy meets the sticky error: the
// loads end with ESTALE, the GPU's context is reset once (.ucm/stats and
// ucm_gpu_resets_total say so), and a new engine that registers is
// served; on the simulated device the dead engine's file stays mapped
// and loads go on. Either way the daemon keeps serving, and an engine
// that holds its own descriptor of .ucm/gpu takes its regions with it
// when it dies.
func TestGPUEngineDies(t *testing.T) {
	t.Run("cuda", func(t *testing.T) {
		m, lib := cudaMount(t)
		env := []string{engine.EnvLib + "=" + lib, "FAKECUDA_VISIBLE_DEVICES=1"}
		engineDies(t, m, "ipc", env, registerKV, testKV.BlockBytes, "ESTALE")
		st := readStats(t, m)
		if st.GPU == nil || st.GPU.Resets != 1 || !strings.Contains(st.GPU.LastReset, "ILLEGAL_ADDRESS") {
			t.Errorf("stats after the engine died: %+v, want one reset after CUDA_ERROR_ILLEGAL_ADDRESS", st.GPU)
		}
		srv := httptest.NewServer(m.metricsHandler())
		defer srv.Close()
		if v := scrape(t, srv.URL+"/metrics")["ucm_gpu_resets_total"]; v != 1 {
			t.Errorf("ucm_gpu_resets_total %v, want 1", v)
		}
	})
	t.Run("sim", func(t *testing.T) {
		m := newGPUMount(t, nil, Options{})
		register := func(c *ctl, p *engine.Proc) string {
			r := strings.TrimPrefix(c.mustOK(fmt.Sprintf("register sim %s %d", p.Path, p.Size)), "ok region=")
			return r // one region: the layout's tensors at their offsets inside it
		}
		engineDies(t, m, "sim", nil, register, testKV.PayloadSize(), "")
	})
}

// engineDies runs TestGPUEngineDies on one device: register gives a load
// target for an engine's memory, second the offset of the second block
// in it; dead is the errno of loads into a dead engine ("" where they go
// on).
func engineDies(t *testing.T, m *testMount, kind string, env []string, register func(*ctl, *engine.Proc) string, second int64, dead string) {
	keys := []string{putKV(t, m, 1).ID.String(), putKV(t, m, 2).ID.String()}
	load := func(target string) string {
		return fmt.Sprintf("load %s %s %s:0 %s:%d", target, gpuModel, keys[0], keys[1], second)
	}
	a := startEngine(t, kind, testKV.SegmentSize(), nil, env...)
	c := openCtl(t, m, "gpu")
	target := register(c, a)
	var died atomic.Bool
	last := make(chan string, 1)
	go func() { // loads until one fails, or 20 after the engine died
		after := 0
		for {
			ans, err := c.tryAsk(load(target))
			if err != nil {
				ans = err.Error()
			}
			if !strings.HasPrefix(ans, "ok ") {
				last <- ans
				return
			}
			if died.Load() {
				if after++; after == 20 {
					last <- "still ok"
					return
				}
			}
		}
	}()
	time.Sleep(20 * time.Millisecond)
	if err := a.Die(); err != nil {
		t.Fatal(err)
	}
	died.Store(true)
	got := <-last
	switch {
	case dead == "" && got != "still ok":
		t.Fatalf("loads into a dead engine's file: %q, want them to go on", got)
	case dead != "" && errnoOfAnswer(got) != dead:
		t.Fatalf("loads into a killed engine ended with %q, want err %s", got, dead)
	}

	// A new engine is served.
	b := startEngine(t, kind, testKV.SegmentSize(), nil, env...)
	target = register(c, b)
	c.mustOK(load(target))
	if kind == "sim" {
		for n, off := range []int64{0, second} {
			for l := range gpuLayers {
				for kv := range 2 {
					b.Wrote(engine.Write{Off: off + testKV.PayloadOffset(l, kv), Len: int(testKV.BlockBytes), Seed: kvSeed(n+1, l, kv)})
				}
			}
		}
	} else {
		loadedKV(b, 1, 0, 0, gpuLayers-1)
		loadedKV(b, 2, int(second/testKV.BlockBytes), 0, gpuLayers-1)
	}
	verifyEngine(t, b, "a new engine after one died")

	// An engine holding its own descriptor of .ucm/gpu: its regions go
	// when it dies, whatever the others hold.
	before := readStats(t, m).GPURegions
	own := openCtl(t, m, "gpu")
	e := startEngine(t, kind, testKV.SegmentSize(), []*os.File{own.f}, env...)
	register(own, e)
	own.f.Close() // the engine's copy keeps the session open
	if n := readStats(t, m).GPURegions; n <= before {
		t.Fatalf("gpu_regions %d after the third engine registered, was %d", n, before)
	}
	if err := e.Die(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); readStats(t, m).GPURegions != before; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the dead engine's regions are still registered: %d, want %d", readStats(t, m).GPURegions, before)
		}
	}
	c.mustOK(load(target))
}

// TestGPUVMMDescriptorNotReopened: on the simulated device, register vmm
// maps the passed descriptor itself. A descriptor that only names a file
// (O_PATH) or only reads it, here of a root-only file, is refused
// (EACCES): the daemon never reopens it read-write by its /proc path, so
// a load cannot overwrite the file nor a dump read it out.
func TestGPUVMMDescriptorNotReopened(t *testing.T) {
	sock := t.TempDir() + "/gpu.sock"
	m := newGPUMount(t, nil, Options{GPUSocket: sock})
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, bytes.Repeat([]byte("s"), 64<<10), 0o600); err != nil {
		t.Fatal(err)
	}
	c := openCtl(t, m, "gpu")
	for _, flags := range []int{unix.O_PATH, unix.O_RDONLY} {
		fd, err := unix.Open(secret, flags|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		f := os.NewFile(uintptr(fd), secret)
		token := passDescriptor(t, m.path(".ucm", "gpu.sock"), f)
		f.Close()
		if a := c.ask(fmt.Sprintf("register vmm %s %d", token, 4096)); errnoOfAnswer(a) != "EACCES" {
			t.Errorf("register vmm of a descriptor opened %#x: %q, want err EACCES", flags, a)
		}
	}
	if b, err := os.ReadFile(secret); err != nil || !bytes.Equal(b, bytes.Repeat([]byte("s"), 64<<10)) {
		t.Fatalf("the file changed: %v", err)
	}
	// A shared-memory file of the caller's own, open read-write, works.
	mfd, err := unix.MemfdCreate("kv", unix.MFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	mf := os.NewFile(uintptr(mfd), "kv")
	defer mf.Close()
	if err := mf.Truncate(64 << 10); err != nil {
		t.Fatal(err)
	}
	token := passDescriptor(t, m.path(".ucm", "gpu.sock"), mf)
	c.mustOK(fmt.Sprintf("register vmm %s %d", token, 4096))
}

// passDescriptor passes f over the GPU socket at sock and returns its
// token.
func passDescriptor(t *testing.T, sock string, f *os.File) string {
	t.Helper()
	conn, err := fdpass.Dial(sock)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.Send([]byte("register 65536"), f); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, fdpass.MaxMessage)
	n, _, err := conn.Recv(buf)
	if err != nil {
		t.Fatal(err)
	}
	token, ok := strings.CutPrefix(strings.TrimSpace(string(buf[:n])), "ok token=")
	if !ok {
		t.Fatalf("passing the descriptor: %q", buf[:n])
	}
	return token
}
