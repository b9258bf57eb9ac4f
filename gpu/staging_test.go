package gpu

import (
	"errors"
	"testing"
)

// TestStaging: a staging buffer is registered read-write while it lives
// and unregistered before it is unmapped, on both devices; dumps into it
// work.
func TestStaging(t *testing.T) {
	d, fc := openFakeWith(t, Config{})
	e := startEngine(t, "ipc", 64<<10, fakeCUDA(t))
	r, err := d.OpenRegion(e.spec)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	s, err := NewStaging(d, 10000)
	if err != nil {
		t.Fatal(err)
	}
	b := s.Bytes()
	if fc.flagsOf(b) != cuMemHostRegisterPortable {
		t.Errorf("staging registration flags %#x, want PORTABLE (read-write)", fc.flagsOf(b))
	}
	e.fill(500, 10000, 11)
	if err := r.CopyOut(500, b[:10000]); err != nil || firstDiff(b[:10000], blockData(11, 10000)) != "" {
		t.Fatalf("dump into a staging buffer: %v", err)
	}
	start := &b[0]
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if f := fc.hostFlags(uintptrOf(start)); f != -1 {
		t.Error("staging buffer still registered after Close")
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := NewStaging(d, 0); !errors.Is(err, ErrBounds) {
		t.Errorf("NewStaging(0): %v", err)
	}
	sim, _ := Open(Config{Mode: "sim", Logger: quietLog()})
	defer sim.Close()
	s2, err := NewStaging(sim, 4096)
	if err != nil {
		t.Fatal(err)
	}
	if st := sim.Stats(); st.HostRanges != 1 || st.HostPending != 0 {
		t.Errorf("sim stats with a staging buffer: %+v", st)
	}
	s2.Close()
}
