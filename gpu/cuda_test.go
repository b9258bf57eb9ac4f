package gpu

import (
	"bytes"
	"encoding/hex"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/ebitengine/purego"
	"golang.org/x/sys/unix"
)

// fakeLive asks the stand-in driver how many contexts, streams, IPC
// mappings and host registrations it still holds.
func fakeLive(t *testing.T, lib string) int {
	t.Helper()
	l, err := loadCUDA(lib)
	if err != nil {
		t.Fatal(err)
	}
	var live func() int32
	purego.RegisterLibFunc(&live, l.handle, "fakecuda_live")
	return int(live())
}

func openFake(t *testing.T) (Device, string) {
	t.Helper()
	lib := fakeCUDA(t)
	dev, err := Open(Config{Mode: "cuda", Library: lib, Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	return dev, lib
}

// registerScenario: registration bookkeeping matches the driver's rules.
func registerScenario(t *testing.T, dev Device) {
	arena := hostArena(t, 1<<20)
	if err := dev.RegisterHost(arena, HostReadWrite); err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"same range": arena, "inside": arena[4096:8192], "overlapping end": arena[len(arena)-1:]} {
		if err := dev.RegisterHost(b, HostReadWrite); !errors.Is(err, ErrRegistered) {
			t.Errorf("RegisterHost(%s) = %v, want ErrRegistered", name, err)
		}
	}
	if err := dev.RegisterHost(nil, HostReadWrite); !errors.Is(err, ErrBounds) {
		t.Errorf("RegisterHost(nil) = %v, want ErrBounds", err)
	}
	ro, err := unix.Mmap(-1, 0, 1<<16, unix.PROT_READ, unix.MAP_SHARED|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(ro)
	if err := dev.RegisterHost(ro, HostReadOnly); err != nil {
		t.Fatalf("RegisterHost(read-only mapping, HostReadOnly): %v", err)
	}
	// Unregister before unmap, always: pinned pages must not outlive
	// their mapping.
	defer func() {
		if err := dev.UnregisterHost(ro); err != nil {
			t.Errorf("UnregisterHost(read-only mapping): %v", err)
		}
	}()
	// Go memory (never unmapped) left registered: Close must unregister it.
	if err := dev.RegisterHost(make([]byte, 1<<16), HostReadWrite); err != nil {
		t.Fatal(err)
	}
	if err := dev.UnregisterHost(arena[4096:]); !errors.Is(err, ErrNotRegistered) {
		t.Errorf("UnregisterHost(not a registered start) = %v, want ErrNotRegistered", err)
	}
	if err := dev.UnregisterHost(arena); err != nil {
		t.Fatal(err)
	}
	if err := dev.UnregisterHost(arena); !errors.Is(err, ErrNotRegistered) {
		t.Errorf("second UnregisterHost = %v, want ErrNotRegistered", err)
	}
}

// badSpecScenario: specs that cannot be opened fail with the right
// sentinel and leave nothing open. e's memory is 64 KiB.
func badSpecScenario(t *testing.T, dev Device, e *engineProc) {
	zero := make([]byte, IPCHandleSize)
	cases := []struct {
		name string
		spec RegionSpec
		want error
	}{
		{"no handle", RegionSpec{Size: 1}, ErrBadHandle},
		{"a sim path", RegionSpec{Path: "/dev/shm/x", Size: 1}, ErrBadHandle},
		{"short handle", RegionSpec{Handle: zero[:63], Size: 1}, ErrBadHandle},
		{"bad hex", RegionSpec{Handle: bytes.Repeat([]byte("zz"), IPCHandleSize), Size: 1}, ErrBadHandle},
		{"zero handle", RegionSpec{Handle: zero, Size: 1}, ErrBadHandle},
		{"negative size", RegionSpec{Handle: e.spec.Handle, Size: -1}, ErrSize},
		{"larger than the allocation", RegionSpec{Handle: e.spec.Handle, Size: e.size + 1}, ErrSize},
		{"negative offset", RegionSpec{Handle: e.spec.Handle, Offset: -1, Size: 1}, ErrSize},
		{"offset at the end", RegionSpec{Handle: e.spec.Handle, Offset: e.size, Size: 1}, ErrSize},
		{"offset+size past the end", RegionSpec{Handle: e.spec.Handle, Offset: e.size / 2, Size: e.size/2 + 1}, ErrSize},
		{"offset+size overflows", RegionSpec{Handle: e.spec.Handle, Offset: math.MaxInt64, Size: 2}, ErrSize},
		{"no such device", RegionSpec{Handle: e.spec.Handle, Size: 1, DeviceIndex: 1 << 20}, ErrNoDevice},
		{"negative device", RegionSpec{Handle: e.spec.Handle, Size: 1, DeviceIndex: -1}, ErrNoDevice},
	}
	for _, c := range cases {
		r, err := dev.OpenRegion(c.spec)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: OpenRegion = %v, %v; want %v", c.name, r, err, c.want)
		}
	}
	// The good spec still opens (the failures closed what they opened),
	// also as raw bytes and as a smaller region.
	raw, err := hex.DecodeString(string(e.spec.Handle))
	if err != nil {
		t.Fatal(err)
	}
	for _, spec := range []RegionSpec{e.spec, {Handle: raw, Size: e.size / 2}, {Handle: raw, Size: 0}} {
		r, err := dev.OpenRegion(spec)
		if err != nil {
			t.Fatalf("OpenRegion(size %d): %v", spec.Size, err)
		}
		if err := r.CopyIn(spec.Size, []byte{1}); !errors.Is(err, ErrBounds) {
			t.Errorf("CopyIn one past a %d-byte region: %v, want ErrBounds", spec.Size, err)
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
	regionAtOffset(t, dev, RegionSpec{Handle: e.spec.Handle, Offset: 1000, Size: 2000}, e)
}

// regionAtOffset opens spec, a region at an offset inside e's memory, and
// checks that region offset 0 is memory offset spec.Offset and that the
// region ends where it should.
func regionAtOffset(t *testing.T, dev Device, spec RegionSpec, e *engineProc) {
	t.Helper()
	r, err := dev.OpenRegion(spec)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	n := int(spec.Size)
	if err := r.CopyIn(spec.Size-10, make([]byte, 20)); !errors.Is(err, ErrBounds) {
		t.Errorf("CopyIn across the end of a region at an offset: %v, want ErrBounds", err)
	}
	seed := uint64(spec.Offset)
	if err := r.CopyIn(0, blockData(seed, n)); err != nil {
		t.Fatal(err)
	}
	e.wrote(write{Off: spec.Offset, Len: n, Seed: seed})
	e.verify("region at an offset")
	got := make([]byte, n)
	if err := r.CopyOut(0, got); err != nil || !bytes.Equal(got, blockData(seed, n)) {
		t.Fatalf("CopyOut of a region at an offset: %v, bytes equal %v", err, bytes.Equal(got, blockData(seed, n)))
	}
}

func TestFakeCUDADevice(t *testing.T) {
	dev, lib := openFake(t)
	registerScenario(t, dev)
	badSpecScenario(t, dev, startEngine(t, "ipc", 64<<10, lib))
	e := startEngine(t, "ipc", 64<<10, lib)
	r, err := dev.OpenRegion(e.spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := dev.Close(); err != nil {
		t.Fatal(err)
	}
	if n := fakeLive(t, lib); n != 0 {
		t.Fatalf("after Close the driver still holds %d contexts, streams, mappings or registrations", n)
	}
	closedScenario(t, dev, r)
}

// closedScenario: after Device.Close everything fails with ErrClosed,
// except closing again.
func closedScenario(t *testing.T, dev Device, r Region) {
	if err := r.CopyIn(0, []byte{1}); !errors.Is(err, ErrClosed) {
		t.Errorf("CopyIn after device Close: %v, want ErrClosed", err)
	}
	if err := dev.RegisterHost(make([]byte, 8), HostReadWrite); !errors.Is(err, ErrClosed) {
		t.Errorf("RegisterHost after Close: %v, want ErrClosed", err)
	}
	if _, err := dev.OpenRegion(RegionSpec{Path: "x", Handle: make([]byte, IPCHandleSize)}); !errors.Is(err, ErrClosed) {
		t.Errorf("OpenRegion after Close: %v, want ErrClosed", err)
	}
	if err := r.Close(); err != nil {
		t.Errorf("region Close after device Close: %v", err)
	}
	if err := dev.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestFakeCUDAThreadModel: the stand-in driver, like the real one, keeps
// the current context per OS thread. A call from an ordinary goroutine
// finds none; the same work through the device succeeds from many
// goroutines at once, because it all runs on the device's thread.
func TestFakeCUDAThreadModel(t *testing.T) {
	dev, lib := openFake(t)
	defer dev.Close()
	l, err := loadCUDA(lib)
	if err != nil {
		t.Fatal(err)
	}
	var stream uintptr
	err = l.check("cuStreamCreate", l.cuStreamCreate(&stream, cuStreamNonBlocking))
	var ce *CUDAError
	if !errors.As(err, &ce) || ce.Name != "CUDA_ERROR_INVALID_CONTEXT" || !strings.Contains(err.Error(), "cuStreamCreate") {
		t.Fatalf("driver call off the device thread: %v, want CUDA_ERROR_INVALID_CONTEXT", err)
	}
	e := startEngine(t, "ipc", 8*slotSize, lib)
	r, err := dev.OpenRegion(e.spec)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Go(func() {
			w := write{Off: int64(i) * slotSize, Len: slotSize, Seed: uint64(i)}
			if err := r.CopyIn(w.Off, blockData(w.Seed, w.Len)); err != nil {
				errs <- err
			}
		})
		e.wrote(write{Off: int64(i) * slotSize, Len: slotSize, Seed: uint64(i)})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	e.verify("after concurrent copies")
}

func TestCUDADevice(t *testing.T) {
	dev := realCUDA(t)
	if !strings.HasPrefix(dev.Name(), "cuda:0 ") {
		t.Errorf("Name() = %q, want cuda:0 <name>", dev.Name())
	}
	registerScenario(t, dev)
	badSpecScenario(t, dev, startEngine(t, "ipc", 64<<10, DefaultLibrary))
}

func TestOpenCUDAWithoutDriver(t *testing.T) {
	_, err := Open(Config{Mode: "cuda", Library: "/nonexistent/libcuda.so.1", Logger: quietLog()})
	if !errors.Is(err, ErrNoDevice) {
		t.Fatalf("Open(cuda) without the library: %v, want ErrNoDevice", err)
	}
	// A library that loads but is no CUDA driver.
	_, err = Open(Config{Mode: "cuda", Library: "libc.so.6", Logger: quietLog()})
	if !errors.Is(err, ErrNoDevice) || !strings.Contains(err.Error(), "cuInit") {
		t.Fatalf("Open(cuda) with libc: %v, want ErrNoDevice naming cuInit", err)
	}
}

func TestParseHandle(t *testing.T) {
	var raw [IPCHandleSize]byte
	for i := range raw {
		raw[i] = byte(i*37 + 1)
	}
	for name, in := range map[string][]byte{
		"raw":       raw[:],
		"hex":       []byte(hex.EncodeToString(raw[:])),
		"upper hex": []byte(strings.ToUpper(hex.EncodeToString(raw[:]))),
	} {
		h, err := parseHandle(in)
		if err != nil || h.Reserved != raw {
			t.Errorf("%s: parseHandle = %x, %v", name, h.Reserved, err)
		}
	}
	for _, n := range []int{0, 1, 63, 65, 127, 129} {
		if _, err := parseHandle(make([]byte, n)); !errors.Is(err, ErrBadHandle) {
			t.Errorf("parseHandle(%d bytes) = %v, want ErrBadHandle", n, err)
		}
	}
	if _, err := parseHandle(bytes.Repeat([]byte("g0"), IPCHandleSize)); !errors.Is(err, ErrBadHandle) {
		t.Errorf("parseHandle(bad hex) = %v, want ErrBadHandle", err)
	}
}

func TestCUDAErrorIs(t *testing.T) {
	for code, want := range map[int]error{100: ErrNoDevice, 101: ErrNoDevice, 400: ErrBadHandle, 712: ErrRegistered, 713: ErrNotRegistered} {
		err := error(&CUDAError{Func: "f", Code: code, Name: "N"})
		if !errors.Is(err, want) {
			t.Errorf("code %d does not match %v", code, want)
		}
	}
	if errors.Is(&CUDAError{Code: 1}, ErrBadHandle) {
		t.Error("CUDA_ERROR_INVALID_VALUE matches ErrBadHandle")
	}
}
