package integration

import (
	"crypto/md5"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/internal/engine"
)

// The GPU path of the real binary, driven by engine processes (package
// internal/engine: this test binary re-executed, see TestMain) against the
// stand-in CUDA driver, which CI builds with its C compiler, and against
// the simulated device.

// standIn builds gpu/testdata/fakecuda.c once (engine.SharedStandIn).
func standIn(t *testing.T) string {
	t.Helper()
	lib, err := engine.SharedStandIn("../gpu/testdata/fakecuda.c")
	if errors.Is(err, engine.ErrNoCompiler) {
		t.Skip("no C compiler to build the stand-in CUDA driver")
	}
	if err != nil {
		t.Fatal(err)
	}
	return lib
}

// kv is the engines' KV cache: 4 layers of K and V tensors of 16 slots
// of 1 KiB inside one segment.
var kv = engine.KVLayout{Layers: 4, Blocks: 16, BlockBytes: 1024, Start: 8192, Align: 4096}

// kvPiece seeds block n's K (0) or V (1) bytes of a layer.
func kvPiece(n, layer, half int) uint64 { return uint64(n<<8 | layer<<1 | half) }

// putKVBlock publishes block n, its payload laid out as kv expects, with
// cp into the mount and returns its id.
func putKVBlock(t *testing.T, d *daemon, n int) string {
	t.Helper()
	id := format.ID(md5.Sum(fmt.Appendf(nil, "engine/%d", n)))
	var payload []byte
	for l := range kv.Layers {
		for half := range 2 {
			payload = append(payload, engine.Pattern(kvPiece(n, l, half), int(kv.BlockBytes))...)
		}
	}
	src := filepath.Join(t.TempDir(), "block")
	h := format.BlockHeader{ID: id, NumLayers: uint32(kv.Layers), BlockSize: 16, Dtype: format.Float16}
	if err := os.WriteFile(src, format.NewBlock(h, payload), 0o600); err != nil {
		t.Fatal(err)
	}
	sh(t, "cp", src, blockPath(d.Mnt, gpuModel, id.String()))
	return id.String()
}

// runEngine starts an engine process; env adds to its environment.
func runEngine(t *testing.T, kind string, env ...string) *engine.Proc {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	shm := t.TempDir()
	if d, err := os.MkdirTemp("/dev/shm", "ucmfs-it-engine-"); err == nil {
		shm = d
		t.Cleanup(func() { os.RemoveAll(d) })
	}
	p, err := engine.Start(exe, t.TempDir(), nil, append([]string{engine.EnvKind + "=" + kind,
		engine.EnvSize + "=" + strconv.FormatInt(kv.SegmentSize(), 10), engine.EnvDir + "=" + shm, "FAKECUDA_DIR=" + shm}, env...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Quit() })
	return p
}

// gpuCtl is one session of MNT/.ucm/gpu.
type gpuCtl struct {
	t *testing.T
	f *os.File
}

// openGPU opens a session of MNT/.ucm/gpu.
func openGPU(t *testing.T, d *daemon) *gpuCtl {
	t.Helper()
	f, err := os.OpenFile(d.path(".ucm", "gpu"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return &gpuCtl{t: t, f: f}
}

// ask sends one request and returns its answer line (a failed write or
// read comes back as the answer), so it may run off the test's goroutine.
func (c *gpuCtl) ask(req string) string {
	if _, err := c.f.WriteString(req + "\n"); err != nil {
		return "write: " + err.Error()
	}
	b, err := io.ReadAll(c.f)
	if err != nil {
		return "read: " + err.Error()
	}
	return strings.TrimSuffix(string(b), "\n")
}

// ok asks and fails the test unless the answer is ok.
func (c *gpuCtl) ok(req string) string {
	c.t.Helper()
	a := c.ask(req)
	if !strings.HasPrefix(a, "ok") {
		c.t.Fatalf("%.120s: %s", req, a)
	}
	return a
}

// loaded records that block n went whole to slot of every K and V tensor.
func loaded(p *engine.Proc, n, slot int) {
	for l := range kv.Layers {
		for half := range 2 {
			p.Wrote(engine.Write{Off: kv.Slot(l, half, slot), Len: int(kv.BlockBytes), Seed: kvPiece(n, l, half)})
		}
	}
}

// TestGPUEngineStandIn: the real daemon with --gpu cuda on the stand-in
// driver. An IPC engine on the third GPU registers its per-layer K and V
// tensors by UUID and takes blocks in single K/V requests; a VMM engine
// on the second GPU passes its fd over MNT/.ucm/gpu.sock and registers it
// with its token; the engines verify every byte. Then the IPC engine is
// killed while loads run: they end with ESTALE, .ucm/stats counts one
// reset, and a new engine is served; the daemon never stops serving.
func TestGPUEngineStandIn(t *testing.T) {
	lib := standIn(t)
	sock := filepath.Join(testDir(t), "gpu.sock")
	d := mountUCM(t, mountOpts{Args: []string{"--gpu", "cuda", "--cuda-library", lib, "--gpu-socket", sock}})
	sh(t, "mkdir", d.path(gpuModel))
	ids := []string{putKVBlock(t, d, 1), putKVBlock(t, d, 2)}
	c := openGPU(t, d)

	engineEnv := []string{engine.EnvLib + "=" + lib, "FAKECUDA_VISIBLE_DEVICES=2"}
	registerKV := func(p *engine.Proc) string {
		var k, v []string
		for l := range kv.Layers {
			for half, list := range []*[]string{&k, &v} {
				a := c.ok(fmt.Sprintf("register cuda %s %d offset=%d uuid=%s", p.Handle, kv.TensorSize(), kv.TensorOffset(l, half), p.UUID))
				*list = append(*list, strings.TrimPrefix(a, "ok region="))
			}
		}
		return strings.Join(k, ",") + "/" + strings.Join(v, ",")
	}
	load := func(target string) string {
		return fmt.Sprintf("load %s %s %s:%d %s:%d", target, gpuModel, ids[0], 3*kv.BlockBytes, ids[1], 9*kv.BlockBytes)
	}
	a := runEngine(t, "ipc", engineEnv...)
	target := registerKV(a)
	c.ok(load(target))
	loaded(a, 1, 3)
	loaded(a, 2, 9)
	if err := a.Verify(); err != nil {
		t.Fatal(err)
	}

	v := runEngine(t, "vmm", engine.EnvLib+"="+lib, "FAKECUDA_VISIBLE_DEVICES=1", engine.EnvSocket+"="+d.path(".ucm", "gpu.sock"))
	r := strings.TrimPrefix(c.ok(fmt.Sprintf("register vmm %s %d offset=%d uuid=%s", v.Token, kv.TensorSize(), kv.TensorOffset(0, 1), v.UUID)), "ok region=")
	c.ok(fmt.Sprintf("load %s %s %s:%d:0", r, gpuModel, ids[1], 5*kv.BlockBytes))
	for half := range 2 {
		v.Wrote(engine.Write{Off: kv.Slot(0, 1, 5) + int64(half)*kv.BlockBytes, Len: int(kv.BlockBytes), Seed: kvPiece(2, 0, half)})
	}
	if err := v.Verify(); err != nil {
		t.Fatal(err)
	}

	done := make(chan string, 1)
	go func() {
		for {
			if ans := c.ask(load(target)); !strings.HasPrefix(ans, "ok ") {
				done <- ans
				return
			}
		}
	}()
	if err := a.Die(); err != nil {
		t.Fatal(err)
	}
	if ans := <-done; !strings.HasPrefix(ans, "err ESTALE ") {
		t.Fatalf("loads into a killed engine ended with %q, want err ESTALE", ans)
	}
	st := statsOf(t, d)
	g, _ := st["gpu"].(map[string]any)
	if g == nil || g["resets"] != 1.0 || !strings.Contains(fmt.Sprint(g["last_reset"]), "ILLEGAL_ADDRESS") {
		t.Errorf("stats after the engine died: %v", st["gpu"])
	}
	b := runEngine(t, "ipc", engineEnv...)
	c.ok(load(registerKV(b)))
	loaded(b, 1, 3)
	loaded(b, 2, 9)
	if err := b.Verify(); err != nil {
		t.Fatal(err)
	}
	if err := format.VerifyFile(blockPath(d.Mnt, gpuModel, ids[0])); err != nil {
		t.Errorf("reading a block after the engine died: %v", err)
	}
}

// TestGPUEngineSim: the real daemon with --gpu sim. A simulated engine
// passes its shared-memory file over MNT/.ucm/gpu.sock and registers it
// with its token; loads land where it expects; it is killed while loads
// run, and they go on (its file stays mapped); a new engine is served.
func TestGPUEngineSim(t *testing.T) {
	sock := filepath.Join(testDir(t), "gpu.sock")
	d := mountUCM(t, mountOpts{Args: []string{"--gpu", "sim", "--gpu-socket", sock}})
	sh(t, "mkdir", d.path(gpuModel))
	id := putKVBlock(t, d, 7)
	c := openGPU(t, d)
	register := func(p *engine.Proc) string {
		return strings.TrimPrefix(c.ok(fmt.Sprintf("register vmm %s %d offset=%d", p.Token, kv.PayloadSize()*4, kv.Start)), "ok region=")
	}
	load := func(r string) string {
		return fmt.Sprintf("load %s %s %s:0 %s:%d", r, gpuModel, id, id, kv.PayloadSize()*2)
	}
	a := runEngine(t, "sim", engine.EnvSocket+"="+d.path(".ucm", "gpu.sock"))
	r := register(a)
	c.ok(load(r))
	done := make(chan string, 1)
	go func() {
		for i := 0; ; i++ {
			ans := c.ask(load(r))
			if !strings.HasPrefix(ans, "ok ") || i == 200 {
				done <- ans
				return
			}
		}
	}()
	if err := a.Die(); err != nil {
		t.Fatal(err)
	}
	if ans := <-done; !strings.HasPrefix(ans, "ok ") {
		t.Fatalf("loads while a sim engine died: %q", ans)
	}
	b := runEngine(t, "sim", engine.EnvSocket+"="+d.path(".ucm", "gpu.sock"))
	c.ok(load(register(b)))
	for _, off := range []int64{0, kv.PayloadSize() * 2} {
		for l := range kv.Layers {
			for half := range 2 {
				b.Wrote(engine.Write{Off: kv.Start + off + kv.PayloadOffset(l, half), Len: int(kv.BlockBytes), Seed: kvPiece(7, l, half)})
			}
		}
	}
	if err := b.Verify(); err != nil {
		t.Fatal(err)
	}
}

// TestGPUPythonPassFD: the Python client passes its sim region's
// descriptor over MNT/.ucm/gpu.sock (ucmcli gpu --pass-fd: GPU.pass_fd,
// GPU.register_vmm) and loads into it.
func TestGPUPythonPassFD(t *testing.T) {
	d := mountUCM(t, mountOpts{Args: []string{"--gpu", "sim", "--gpu-socket", filepath.Join(testDir(t), "gpu.sock")}})
	sh(t, "mkdir", d.path(gpuModel))
	id := putKVBlock(t, d, 3)
	block, err := os.ReadFile(blockPath(d.Mnt, gpuModel, id))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	saved := filepath.Join(dir, "saved")
	out := mustPy(t, "gpu", "--pass-fd", "--size", "65536", "--save", saved, d.Mnt, "load %r "+gpuModel+" "+id+":100")
	if !strings.HasPrefix(out, "ok loaded=1 ") {
		t.Fatalf("ucmcli gpu --pass-fd: %q", out)
	}
	region, err := os.ReadFile(saved)
	if err != nil {
		t.Fatal(err)
	}
	if want := block[format.HeaderSize:]; string(region[100:100+len(want)]) != string(want) {
		t.Error("the payload did not land at offset 100 of the passed region")
	}
}
