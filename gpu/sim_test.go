package gpu

import (
	"bytes"
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

func openSim(t *testing.T) Device {
	t.Helper()
	dev, err := Open(Config{Mode: "sim", Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Close() })
	return dev
}

func TestSimOpenRegionErrors(t *testing.T) {
	dev := openSim(t)
	dir := shmDir(t)
	file := shmFile(t, 4096)
	cases := []struct {
		name string
		spec RegionSpec
		want []error
	}{
		{"missing file", RegionSpec{Path: filepath.Join(dir, "nope"), Size: 1}, []error{ErrBadHandle, fs.ErrNotExist}},
		{"a directory", RegionSpec{Path: dir, Size: 1}, []error{ErrBadHandle}},
		{"an IPC handle", RegionSpec{Handle: make([]byte, IPCHandleSize), Size: 1}, []error{ErrBadHandle}},
		{"larger than the file", RegionSpec{Path: file, Size: 4097}, []error{ErrSize}},
		{"negative size", RegionSpec{Path: file, Size: -1}, []error{ErrSize}},
		{"negative offset", RegionSpec{Path: file, Offset: -1, Size: 1}, []error{ErrSize}},
		{"offset+size past the end", RegionSpec{Path: file, Offset: 4000, Size: 97}, []error{ErrSize}},
		{"offset+size overflows", RegionSpec{Path: file, Offset: math.MaxInt64, Size: 2}, []error{ErrSize}},
	}
	for _, c := range cases {
		r, err := dev.OpenRegion(c.spec)
		for _, want := range c.want {
			if !errors.Is(err, want) {
				t.Errorf("%s: OpenRegion = %v, %v; want %v", c.name, r, err, want)
			}
		}
	}
}

// TestSimEmptyRegion: a zero-byte region refuses every non-empty copy.
func TestSimEmptyRegion(t *testing.T) {
	dev := openSim(t)
	for _, fileSize := range []int64{0, 4096} {
		file := shmFile(t, fileSize)
		r, err := dev.OpenRegion(RegionSpec{Path: file, Size: 0})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range oobCases(0) {
			if err := r.CopyIn(c.off, make([]byte, c.n)); !errors.Is(err, ErrBounds) {
				t.Errorf("%s: CopyIn into an empty region: %v, want ErrBounds", c.name, err)
			}
		}
		if err := r.CopyIn(0, make([]byte, 1)); !errors.Is(err, ErrBounds) {
			t.Errorf("one byte into an empty region: %v, want ErrBounds", err)
		}
		if err := r.CopyOut(0, nil); err != nil {
			t.Errorf("empty CopyOut of an empty region: %v", err)
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		assertFile(t, file, guardImage(fileSize))
	}
}

// TestSimRegionPrefix: a region smaller than its file covers the file's
// start only; the bytes after it are out of bounds and stay as they were.
func TestSimRegionPrefix(t *testing.T) {
	dev := openSim(t)
	file := shmFile(t, 8192)
	r, err := dev.OpenRegion(RegionSpec{Path: file, Size: 4096})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.CopyIn(4000, make([]byte, 200)); !errors.Is(err, ErrBounds) {
		t.Fatalf("CopyIn across the region's end: %v, want ErrBounds", err)
	}
	if err := r.CopyIn(4000, make([]byte, 96)); err != nil {
		t.Fatal(err)
	}
	want := guardImage(8192)
	clear(want[4000:4096])
	assertFile(t, file, want)
}

// TestSimFault: an engine that shrinks its file under an open region makes
// copies fail with ErrFault instead of killing the daemon with SIGBUS; a
// copy out into a read-only host mapping fails the same way.
func TestSimFault(t *testing.T) {
	dev := openSim(t)
	file := shmFile(t, 64<<10)
	r, err := dev.OpenRegion(RegionSpec{Path: file, Size: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ro, err := unix.Mmap(-1, 0, 4096, unix.PROT_READ, unix.MAP_SHARED|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(ro)
	if err := r.CopyOut(0, ro); !errors.Is(err, ErrFault) {
		t.Errorf("CopyOut into a read-only mapping: %v, want ErrFault", err)
	}
	if err := os.Truncate(file, 0); err != nil {
		t.Fatal(err)
	}
	if err := r.CopyIn(8192, make([]byte, 4096)); !errors.Is(err, ErrFault) {
		t.Errorf("CopyIn into a truncated file: %v, want ErrFault", err)
	}
	if err := r.CopyOut(0, make([]byte, 4096)); !errors.Is(err, ErrFault) {
		t.Errorf("CopyOut of a truncated file: %v, want ErrFault", err)
	}
}

// TestSimRegionAtOffset: a region at an offset that is not page-aligned,
// seen from an engine process.
func TestSimRegionAtOffset(t *testing.T) {
	dev := openSim(t)
	e := startEngine(t, "sim", 3*4096+100, "")
	regionAtOffset(t, dev, RegionSpec{Path: e.spec.Path, Offset: 1000, Size: 2000}, e)
	regionAtOffset(t, dev, RegionSpec{Path: e.spec.Path, Offset: 4096 + 1000, Size: 2000}, e)
}

func TestSimRegisterHost(t *testing.T) {
	dev := openSim(t)
	registerScenario(t, dev)
}

func TestSimClose(t *testing.T) {
	dev, err := Open(Config{Mode: "sim", Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	r, err := dev.OpenRegion(RegionSpec{Path: shmFile(t, 4096), Size: 4096})
	if err != nil {
		t.Fatal(err)
	}
	if err := dev.Close(); err != nil {
		t.Fatal(err)
	}
	closedScenario(t, dev, r)
}

// TestSimConcurrentCopies: copies from many goroutines land where they
// should, and a Close while copies run ends them with ErrClosed, never a
// touch of an unmapped region.
func TestSimConcurrentCopies(t *testing.T) {
	dev := openSim(t)
	const n = 8
	file := shmFile(t, n*slotSize)
	r, err := dev.OpenRegion(RegionSpec{Path: file, Size: n * slotSize})
	if err != nil {
		t.Fatal(err)
	}
	var ws []write
	var wg sync.WaitGroup
	for i := range n {
		w := write{Off: int64(i) * slotSize, Len: slotSize, Seed: uint64(i)}
		ws = append(ws, w)
		wg.Go(func() {
			if err := r.CopyIn(w.Off, blockData(w.Seed, w.Len)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	assertFile(t, file, expectedImage(n*slotSize, ws))

	started := make(chan struct{}, n)
	for i := range n {
		wg.Go(func() {
			buf := make([]byte, slotSize)
			for j := 0; ; j++ {
				if j == 1 {
					started <- struct{}{}
				}
				err := r.CopyOut(int64(i)*slotSize, buf)
				if errors.Is(err, ErrClosed) {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	for range n {
		<-started
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
}

func assertFile(t *testing.T, path string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: %s", path, firstDiff(got, want))
	}
}
