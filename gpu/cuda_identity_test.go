package gpu

import (
	"errors"
	"strings"
	"testing"
)

// physUUID is the stand-in driver's UUID of physical device n.
func physUUID(n int) string { return "GPU-fa4ec0da-0000-4000-8000-00000000000" + string(rune('0'+n)) }

// TestFakeCUDAIdentity: an engine on the daemon's third GPU, which it
// calls GPU 0 (its CUDA_VISIBLE_DEVICES=2), registers by UUID and lands
// there; naming it by the engine's own index is refused as the wrong
// GPU; no context exists on a GPU before a region uses it, and host
// memory registered before any is registered when the first one comes.
func TestFakeCUDAIdentity(t *testing.T) {
	d, fc := openFakeWith(t, Config{})
	for ord := range 4 {
		if n := fc.retained(int32(ord)); n != 0 {
			t.Fatalf("after Open, GPU %d's context is retained %d times; want none before a region", ord, n)
		}
	}
	arena := hostArena(t, 1<<16)
	if err := d.RegisterHost(arena, HostReadOnly); err != nil {
		t.Fatal(err)
	}
	defer d.UnregisterHost(arena)
	if st := d.Stats(); st.HostPending != 1 || fc.flagsOf(arena) != -1 {
		t.Fatalf("before any context: pending %d, driver flags %d; want recorded only", st.HostPending, fc.flagsOf(arena))
	}

	e := startEngine(t, "ipc", 64<<10, fakeCUDA(t), "FAKECUDA_VISIBLE_DEVICES=2")
	if e.uuid != physUUID(2) {
		t.Fatalf("engine UUID %q, want %q", e.uuid, physUUID(2))
	}
	spec := e.spec
	spec.DeviceUUID = strings.ToLower(strings.TrimPrefix(e.uuid, "GPU-"))
	r, err := d.OpenRegion(spec)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got := r.(*cudaRegion).c.ord; got != 2 {
		t.Fatalf("region by UUID opened on cuda:%d, want cuda:2", got)
	}
	hostSync(t, d)
	if st := d.Stats(); len(st.Contexts) != 1 || st.Contexts[0] != 2 || st.HostPending != 0 {
		t.Errorf("stats after the first region: %+v; want contexts [2], nothing pending", st)
	}
	if fc.retained(0) != 0 || fc.retained(2) != 1 {
		t.Errorf("retained: GPU 0 %d, GPU 2 %d; want 0 and 1", fc.retained(0), fc.retained(2))
	}
	if f := fc.flagsOf(arena); f != cuMemHostRegisterPortable|cuMemHostRegisterReadOnly {
		t.Errorf("registration flags %#x, want PORTABLE|READ_ONLY", f)
	}
	if f := fc.ctxFlags(2); f != cuCtxSchedBlockingSync {
		t.Errorf("GPU 2's primary context flags %#x, want CU_CTX_SCHED_BLOCKING_SYNC", f)
	}
	if err := r.CopyIn(100, blockData(5, 1000)); err != nil {
		t.Fatal(err)
	}
	e.wrote(write{Off: 100, Len: 1000, Seed: 5})
	e.verify("after a copy by UUID")

	wrong := e.spec
	wrong.DeviceIndex = 0 // the engine's own number for its GPU
	if _, err := d.OpenRegion(wrong); !errors.Is(err, ErrWrongDevice) || !strings.Contains(err.Error(), "cuda:2") {
		t.Errorf("open on the engine's index: %v, want ErrWrongDevice naming cuda:2", err)
	}
	for _, u := range []string{physUUID(7), "GPU-1234", "GPU-zz4ec0da-0000-4000-8000-000000000002"} {
		bad := e.spec
		bad.DeviceUUID = u
		if _, err := d.OpenRegion(bad); !errors.Is(err, ErrNoDevice) {
			t.Errorf("UUID %q: %v, want ErrNoDevice", u, err)
		}
	}
}

// TestFakeCUDAReadOnlyRegister: where a GPU does not report
// CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED, read-only ranges
// are registered without CU_MEMHOSTREGISTER_READ_ONLY.
func TestFakeCUDAReadOnlyRegister(t *testing.T) {
	fc := fakeControl(t, fakeCUDA(t))
	fc.setAttr(1, 113, 0)
	defer fc.setAttr(1, 113, 1)
	d, _ := openFakeWith(t, Config{})
	if d.Stats().ReadOnlyRegister {
		t.Fatal("ReadOnlyRegister with a GPU that lacks the attribute")
	}
	e := startEngine(t, "ipc", 64<<10, fakeCUDA(t))
	r, err := d.OpenRegion(e.spec)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	arena := hostArena(t, 1<<16)
	if err := d.RegisterHost(arena, HostReadOnly); err != nil {
		t.Fatal(err)
	}
	defer d.UnregisterHost(arena)
	if f := fc.flagsOf(arena); f != cuMemHostRegisterPortable {
		t.Errorf("registration flags %#x, want PORTABLE only", f)
	}
}

func TestProbe(t *testing.T) {
	p, err := Probe(fakeCUDA(t))
	if err != nil {
		t.Fatal(err)
	}
	if p.DriverString() != "12.8" || len(p.Devices) != 4 {
		t.Fatalf("probe: driver %s, %d devices", p.DriverString(), len(p.Devices))
	}
	for i, in := range p.Devices {
		if in.Ordinal != i || in.UUID != physUUID(i) || !in.UnifiedAddressing || !in.VMM || !in.VMMPosixFD ||
			!in.ReadOnlyHostRegister || !in.HostRegister || in.PCIBusID == "" || in.Name != "Fake CUDA Device" {
			t.Errorf("device %d: %+v", i, in)
		}
	}
	if _, err := Probe("/nonexistent/libcuda.so.1"); !errors.Is(err, ErrNoDevice) {
		t.Errorf("Probe without a driver: %v, want ErrNoDevice", err)
	}
}

func TestParseUUID(t *testing.T) {
	want := "GPU-fa4ec0da-0000-4000-8000-000000000002"
	for _, in := range []string{want, "fa4ec0da000040008000000000000002", "GPU-FA4EC0DA-0000-4000-8000-000000000002"} {
		if got, err := ParseUUID(in); got != want || err != nil {
			t.Errorf("ParseUUID(%q) = %q, %v", in, got, err)
		}
	}
	for _, in := range []string{"", "GPU-", "fa4ec0da", "GPU-xa4ec0da-0000-4000-8000-000000000002"} {
		if _, err := ParseUUID(in); err == nil {
			t.Errorf("ParseUUID(%q) succeeded", in)
		}
	}
}
