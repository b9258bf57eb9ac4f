package gpu

import (
	"errors"
	"strings"
	"testing"
)

// TestFakeCUDAEngineDeath: an engine dies with a region open; the next
// copy into its memory faults (CUDA_ERROR_ILLEGAL_ADDRESS, sticky), the
// context is reset, every region on that GPU is refused from then on
// with ErrReset (another engine's too: the reset unmapped it), host
// memory is registered again, and a new registration works: the daemon
// keeps serving.
func TestFakeCUDAEngineDeath(t *testing.T) {
	d, fc := openFakeWith(t, Config{})
	lib := fakeCUDA(t)
	dying := startEngine(t, "ipc", 64<<10, lib)
	other := startEngine(t, "ipc", 64<<10, lib)
	r1, err := d.OpenRegion(dying.spec)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := d.OpenRegion(other.spec)
	if err != nil {
		t.Fatal(err)
	}
	arena := hostArena(t, 1<<16)
	if err := d.RegisterHost(arena, HostReadWrite); err != nil {
		t.Fatal(err)
	}
	defer d.UnregisterHost(arena)
	resets := fc.counter(fakeResets)

	dying.die()
	err = r1.CopyIn(0, arena[:4096])
	if !errors.Is(err, ErrReset) || !strings.Contains(err.Error(), "CUDA_ERROR_ILLEGAL_ADDRESS") {
		t.Fatalf("copy into a dead engine's memory: %v, want ErrReset naming CUDA_ERROR_ILLEGAL_ADDRESS", err)
	}
	if fc.counter(fakeResets) != resets+1 {
		t.Error("the context was not reset")
	}
	for name, r := range map[string]Region{"the dead engine's region": r1, "another engine's region": r2} {
		if err := r.CopyIn(0, []byte{1}); !errors.Is(err, ErrReset) {
			t.Errorf("%s after the reset: %v, want ErrReset", name, err)
		}
		if err := r.Close(); err != nil {
			t.Errorf("closing %s after the reset: %v", name, err)
		}
	}
	hostSync(t, d)
	if fc.flagsOf(arena) < 0 {
		t.Error("host memory was not registered again after the reset")
	}
	if st := d.Stats(); st.Resets != 1 || !strings.Contains(st.LastReset, "ILLEGAL_ADDRESS") {
		t.Errorf("stats: resets %d, last %q", st.Resets, st.LastReset)
	}

	// The surviving engine registers again and is served.
	r3, err := d.OpenRegion(other.spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := r3.CopyIn(10, blockData(9, 3000)); err != nil {
		t.Fatal(err)
	}
	other.wrote(write{Off: 10, Len: 3000, Seed: 9})
	other.verify("after the reset")

	// A fault injected on purpose (a launch failure) is handled the same.
	fc.inject(0, 719)
	if err := r3.CopyIn(0, []byte{1}); !errors.Is(err, ErrReset) || !strings.Contains(err.Error(), "LAUNCH_FAILED") {
		t.Fatalf("injected sticky error: %v", err)
	}
	r3.Close()
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if n := fc.live(); n != 0 {
		t.Fatalf("after Close the driver still holds %d objects", n)
	}
}

// TestSessionClose: closing a session refuses every region's copies at
// once and closes them; regions opened through it are counted.
func TestSessionClose(t *testing.T) {
	d, fc := openFakeWith(t, Config{})
	lib := fakeCUDA(t)
	e := startEngine(t, "ipc", 64<<10, lib)
	s := NewSession(d)
	var regions []Region
	for _, off := range []int64{0, 4096, 8192} {
		r, err := s.OpenRegion(RegionSpec{Handle: e.spec.Handle, Offset: off, Size: 4096})
		if err != nil {
			t.Fatal(err)
		}
		regions = append(regions, r)
	}
	if err := s.CloseRegion(regions[2]); err != nil || s.Len() != 2 {
		t.Fatalf("CloseRegion: %v, %d left", err, s.Len())
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for i, r := range regions {
		if err := r.CopyIn(0, []byte{1}); !errors.Is(err, ErrClosed) {
			t.Errorf("region %d after the session closed: %v, want ErrClosed", i, err)
		}
	}
	if _, err := s.OpenRegion(e.spec); !errors.Is(err, ErrClosed) {
		t.Errorf("OpenRegion on a closed session: %v", err)
	}
	d.Close()
	if n := fc.live(); n != 0 {
		t.Fatalf("after Close the driver still holds %d objects", n)
	}
}

// TestFakeCUDAEngineDiesMidLoad: the engine dies while the daemon is
// copying into its memory in a loop; the copies end with ErrReset (never
// a crash), and a new engine is served afterwards.
func TestFakeCUDAEngineDiesMidLoad(t *testing.T) {
	d, _ := openFakeWith(t, Config{Streams: 2})
	lib := fakeCUDA(t)
	e := startEngine(t, "ipc", kv.SegmentSize(), lib)
	r, err := d.OpenRegion(e.spec)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ops := blockOps(r, 0, payloadOf(1))
	done := make(chan error, 1)
	started := make(chan struct{})
	go func() {
		for i := 0; ; i++ {
			if i == 1 {
				close(started)
			}
			if err := r.CopyInBatch(ops); err != nil {
				done <- err
				return
			}
		}
	}()
	<-started
	e.die()
	if err := <-done; !errors.Is(err, ErrReset) {
		t.Fatalf("loads while the engine died ended with %v, want ErrReset", err)
	}
	next := startEngine(t, "ipc", 64<<10, lib)
	r2, err := d.OpenRegion(next.spec)
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	if err := r2.CopyIn(0, blockData(2, 4096)); err != nil {
		t.Fatal(err)
	}
	next.wrote(write{Len: 4096, Seed: 2})
	next.verify("a new engine after one died mid-load")
}
