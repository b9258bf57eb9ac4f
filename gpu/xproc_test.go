package gpu

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"

	"golang.org/x/sys/unix"
)

// The cross-process scenario: an engine process owns device memory; this
// process opens it as a Region and copies; the engine checks every byte.
const (
	slotSize   = 16 << 10
	slots      = 128
	regionSize = slots * slotSize
)

// plan100 returns 100 writes into distinct slots: whole slots and partial
// ranges inside a slot, alternately. Slot 0 (a whole block at offset 0) and
// the last slot (a range ending exactly at the region's end) are always
// among them; the 28 slots left out, and the rest of each partial slot,
// must keep their guard bytes.
func plan100(rng *rand.Rand) []write {
	chosen := []int{0, slots - 1}
	for _, s := range rng.Perm(slots - 2)[:98] {
		chosen = append(chosen, s+1)
	}
	ws := make([]write, len(chosen))
	for i, s := range chosen {
		base := int64(s) * slotSize
		w := write{Off: base, Len: slotSize, Seed: uint64(1000 + i)}
		switch {
		case s == slots-1:
			start := 1 + rng.IntN(slotSize-1)
			w.Off, w.Len = base+int64(start), slotSize-start
		case i%2 == 1:
			start := rng.IntN(slotSize)
			w.Off, w.Len = base+int64(start), 1+rng.IntN(slotSize-start)
		}
		ws[i] = w
	}
	return ws
}

// hostArena maps anonymous memory the way the memory tier maps its files
// (page-aligned, outside the Go heap), for registration.
func hostArena(t *testing.T, size int) []byte {
	t.Helper()
	b, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(b) })
	return b
}

func regionScenario(t *testing.T, dev Device, e *engineProc) {
	r, err := dev.OpenRegion(e.spec)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Size() != e.size {
		t.Fatalf("Size() = %d, want %d", r.Size(), e.size)
	}
	ws := plan100(rand.New(rand.NewPCG(1, 2)))

	// 50 single copies from ordinary Go memory, then one batch of 50
	// from registered host memory.
	for _, w := range ws[:50] {
		if err := r.CopyIn(w.Off, blockData(w.Seed, w.Len)); err != nil {
			t.Fatal(err)
		}
	}
	arena := hostArena(t, 50*slotSize)
	if err := dev.RegisterHost(arena, HostReadWrite); err != nil {
		t.Fatal(err)
	}
	batch := make([]CopyOp, 0, 50)
	for i, w := range ws[50:] {
		host := arena[i*slotSize : i*slotSize+w.Len]
		copy(host, blockData(w.Seed, w.Len))
		batch = append(batch, CopyOp{Off: w.Off, Host: host})
	}
	if err := r.CopyInBatch(batch); err != nil {
		t.Fatal(err)
	}
	e.wrote(ws...)
	e.verify("after 100 copies in")

	// Round trip: single copies out, a batch out into the registered
	// arena, and the whole region at once.
	for _, w := range ws[:50] {
		got := make([]byte, w.Len)
		if err := r.CopyOut(w.Off, got); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, blockData(w.Seed, w.Len)) {
			t.Fatalf("CopyOut at %d: bytes differ from what was copied in", w.Off)
		}
	}
	clear(arena)
	if err := r.CopyOutBatch(batch); err != nil {
		t.Fatal(err)
	}
	for i, w := range ws[50:] {
		if !bytes.Equal(batch[i].Host, blockData(w.Seed, w.Len)) {
			t.Fatalf("CopyOutBatch op %d at %d: bytes differ", i, w.Off)
		}
	}
	checkWhole(t, r, e, "after the round trip")

	// The engine writes; this process reads what it wrote.
	e.fill(3*slotSize+100, 5000, 77)
	e.fill(regionSize-10, 10, 78)
	checkWhole(t, r, e, "after the engine's own writes")

	outOfBounds(t, r, e)
	badBatch(t, r, e)

	if err := dev.UnregisterHost(arena); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.CopyIn(0, []byte{1}); !errors.Is(err, ErrClosed) {
		t.Fatalf("CopyIn after Close: %v, want ErrClosed", err)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	e.verify("after Close")
}

// checkWhole copies the whole region out and compares it with what the
// engine's memory must hold.
func checkWhole(t *testing.T, r Region, e *engineProc, what string) {
	t.Helper()
	got := make([]byte, r.Size())
	if err := r.CopyOut(0, got); err != nil {
		t.Fatal(err)
	}
	if d := firstDiff(got, expectedImage(e.size, e.Writes())); d != "" {
		t.Fatalf("%s: whole-region CopyOut: %s", what, d)
	}
}

func TestSimRegionAcrossProcesses(t *testing.T) {
	dev, err := Open(Config{Mode: "sim", Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	regionScenario(t, dev, startEngine(t, "sim", regionSize, ""))
}

func TestFakeCUDARegionAcrossProcesses(t *testing.T) {
	lib := fakeCUDA(t)
	dev, err := Open(Config{Mode: "cuda", Library: lib, Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := dev.Name(), "cuda:0 Fake CUDA Device (4 devices)"; got != want {
		t.Errorf("Name() = %q, want %q", got, want)
	}
	regionScenario(t, dev, startEngine(t, "ipc", regionSize, lib))
	if err := dev.Close(); err != nil {
		t.Fatal(err)
	}
	if n := fakeLive(t, lib); n != 0 {
		t.Fatalf("after Close the driver still holds %d contexts, streams, mappings or registrations", n)
	}
}

func TestCUDARegionAcrossProcesses(t *testing.T) {
	dev := realCUDA(t)
	regionScenario(t, dev, startEngine(t, "ipc", regionSize, DefaultLibrary))
}
