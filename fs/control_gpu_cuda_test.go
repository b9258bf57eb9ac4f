package fs

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/gpu"
	"github.com/ucmfs/ucmfs/internal/engine"
	"golang.org/x/sys/unix"
)

// fakeCUDA builds the gpu package's stand-in CUDA driver
// (gpu/testdata/fakecuda.c: device memory is a shared-memory file whose
// path the IPC handle carries) once per test binary
// (engine.SharedStandIn) and returns its path; it skips the test where no
// C compiler is installed (CI has one: there these tests run).
func fakeCUDA(t testing.TB) string {
	t.Helper()
	lib, err := engine.SharedStandIn("../gpu/testdata/fakecuda.c")
	if errors.Is(err, engine.ErrNoCompiler) {
		t.Skip("no C compiler (cc or gcc) to build the stand-in CUDA driver gpu/testdata/fakecuda.c")
	}
	if err != nil {
		t.Fatal(err)
	}
	return lib
}

// fakeHandle is the stand-in driver's IPC handle of the memory in the
// file at path, as 128 hex digits.
func fakeHandle(t *testing.T, path string) string {
	t.Helper()
	h := make([]byte, gpu.IPCHandleSize)
	copy(h, "FAKE")
	if len(path) >= len(h)-4 {
		t.Skipf("path %s too long for the stand-in driver's handle", path)
	}
	copy(h[4:], path)
	return hex.EncodeToString(h)
}

// TestGPUFakeCUDA runs .ucm/gpu through the CUDA code path (device
// thread, cuMemHostRegister of the memory tier's mappings, IPC handles,
// streams) against the stand-in driver: loads, a dump and the errors
// proper to CUDA regions.
func TestGPUFakeCUDA(t *testing.T) {
	dev, err := gpu.Open(gpu.Config{Mode: "cuda", Library: fakeCUDA(t), Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	m := newGPUMount(t, dev, Options{})
	k, b := gpuBlock(1, 4000)
	if err := writeFile(m.keyPath(k), b); err != nil {
		t.Fatal(err)
	}
	locks := canLock()
	if locks && m.st.Mapping(k) == nil {
		t.Fatal("the memory tier holds no mapping of the block: its registration with the driver failed")
	}
	k2, b2 := gpuBlock(2, 4000)
	region := newSimRegion(t, 64<<10)
	region.write(26000, b2)
	c := openCtl(t, m, "gpu")
	handle := fakeHandle(t, region.path)
	r := strings.TrimPrefix(c.mustOK(fmt.Sprintf("register cuda %s %d offset=0 device=0", handle, 64<<10)), "ok region=")
	c.mustOK(fmt.Sprintf("load %s %s %s:1 %s:17000:1-2 %s:43000:file", r, gpuModel, k.ID, k.ID, k.ID))
	region.expect(1, b[format.HeaderSize:])
	region.expect(17000, layers(b, 1, 2))
	region.expect(43000, b)
	region.check("after a load through the CUDA path")
	if a := c.mustOK(fmt.Sprintf("dump %s %s %s:26000:%d", r, gpuModel, k2.ID, len(b2))); a != "ok dumped=1 existing=0" {
		t.Fatalf("dump: %q", a)
	}
	if err := format.VerifyFile(m.keyPath(k2)); err != nil {
		t.Fatal(err)
	}
	// A region at an offset inside the allocation: offsets count from it.
	r2 := strings.TrimPrefix(c.mustOK(fmt.Sprintf("register cuda %s 4096 offset=60000", handle)), "ok region=")
	c.mustOK(fmt.Sprintf("load %s %s %s:50:2", r2, gpuModel, k.ID))
	region.expect(60050, layers(b, 2, 2))
	if a := c.ask(fmt.Sprintf("load %s %s %s:100", r2, gpuModel, k.ID)); errnoOfAnswer(a) != "EINVAL" {
		t.Errorf("a payload past the end of a 4096-byte region: %q", a)
	}
	region.check("after loads into a region at an offset")
	for _, tc := range []struct{ req, errno string }{
		{fmt.Sprintf("register sim %s 10", region.path), "ENODEV"},
		{"register cuda " + strings.Repeat("00", gpu.IPCHandleSize) + " 10", "EINVAL"},
		{"register cuda " + handle[:100] + " 10", "EINVAL"},
		{"register cuda " + strings.Repeat("zz", gpu.IPCHandleSize) + " 10", "EINVAL"},
		{fmt.Sprintf("register cuda %s %d", handle, 64<<10+1), "EINVAL"},
		{fmt.Sprintf("register cuda %s 10 offset=%d", handle, 64<<10), "EINVAL"},
	} {
		if a := c.ask(tc.req); errnoOfAnswer(a) != tc.errno {
			t.Errorf("%q: %q, want err %s", clip([]byte(tc.req)), a, tc.errno)
		}
	}
	if a := c.ask(fmt.Sprintf("register cuda %s 10 device=3", handle)); !strings.HasPrefix(a, "err ") {
		t.Errorf("a device the driver lacks: %q", a)
	}
	c.mustOK("unregister " + r)
	c.mustOK("unregister " + r2)
	if st := readStats(t, m); !strings.HasPrefix(st.GPUDevice, "cuda:0") || st.GPURegions != 0 || locks && st.GPULoadUnmapped != 0 {
		t.Errorf("stats: device %q, regions %d, unmapped loads %d", st.GPUDevice, st.GPURegions, st.GPULoadUnmapped)
	}
}

// canLock reports whether this process may lock memory (the memory tier
// maps and registers only what it can lock).
func canLock() bool {
	b := make([]byte, 4096)
	if err := unix.Mlock(b); err != nil {
		return false
	}
	unix.Munlock(b)
	return true
}

// TestGPURealCUDA mounts with the NVIDIA driver's device, where there is
// one: the memory tier's mappings are registered with cuMemHostRegister
// and loaded blocks come from them. Engine memory needs an IPC handle
// from another process, which this test does not have: it checks that a
// bad handle is refused and the mount keeps serving.
func TestGPURealCUDA(t *testing.T) {
	dev, err := gpu.Open(gpu.Config{Mode: "cuda", Logger: testLogger()})
	if errors.Is(err, gpu.ErrNoDevice) {
		t.Skipf("no CUDA driver or GPU here (%v): the real CUDA path of .ucm/gpu runs on a GPU machine", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	m := newGPUMount(t, dev, Options{})
	k, b := gpuBlock(1, 1<<20)
	if err := writeFile(m.keyPath(k), b); err != nil {
		t.Fatal(err)
	}
	if canLock() && m.st.Mapping(k) == nil {
		t.Error("the memory tier holds no mapping of the block: its registration with the driver failed")
	}
	c := openCtl(t, m, "gpu")
	if a := c.ask("register cuda " + strings.Repeat("00", gpu.IPCHandleSize) + " 4096"); errnoOfAnswer(a) != "EINVAL" {
		t.Errorf("a zero IPC handle: %q", a)
	}
	if st := readStats(t, m); !strings.HasPrefix(st.GPUDevice, "cuda:") {
		t.Errorf("gpu_device %q", st.GPUDevice)
	}
}
