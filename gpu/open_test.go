package gpu

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

// logTo returns a logger writing text lines into buf.
func logTo(buf *bytes.Buffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(buf, nil))
}

// TestOpenAuto: auto falls back to the simulated device, with one log line
// saying so, when the driver is missing (as on this machine and in CI),
// and picks CUDA when a driver with a device loads.
func TestOpenAuto(t *testing.T) {
	var log bytes.Buffer
	dev, err := Open(Config{Mode: "auto", Library: "/nonexistent/libcuda.so.1", Logger: logTo(&log)})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	if dev.Name() != "sim" {
		t.Errorf("Open(auto) without a driver: %q, want sim", dev.Name())
	}
	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	// An info line: a host without a GPU is a normal host.
	if len(lines) != 1 || !strings.Contains(lines[0], "level=INFO") || !strings.Contains(lines[0], "device=sim") ||
		!strings.Contains(lines[0], "nonexistent") {
		t.Errorf("Open(auto) logged %q, want one info line naming sim and why", log.String())
	}
	if st := dev.Stats(); !strings.Contains(st.Fallback, "nonexistent") {
		t.Errorf("Stats().Fallback = %q, want the reason", st.Fallback)
	}
	sel, fallback, err := Select(Config{Library: "libc.so.6"})
	if err != nil || sel.Name() != "sim" || !errors.Is(fallback, ErrNoDevice) || !strings.Contains(fallback.Error(), "cuInit") {
		t.Errorf("Select(auto) with a library that is no driver: %v, fallback %v, %v", sel, fallback, err)
	}
	sel.Close()

	def, err := Open(Config{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	defer def.Close()
	if _, lerr := loadCUDA(DefaultLibrary); lerr != nil && def.Name() != "sim" {
		t.Errorf("Open() with no %s: %q, want sim", DefaultLibrary, def.Name())
	}
	t.Logf("Open() on this machine: %s", def.Name())
}

func TestOpenAutoPicksCUDA(t *testing.T) {
	lib := fakeCUDA(t)
	var log bytes.Buffer
	dev, err := Open(Config{Library: lib, Logger: logTo(&log)})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	if !strings.HasPrefix(dev.Name(), "cuda:0 ") || !strings.Contains(log.String(), "cuda:0") {
		t.Errorf("Open(auto) with a driver: %q (log %q), want the CUDA device", dev.Name(), log.String())
	}
	if st := dev.Stats(); st.Fallback != "" || st.DriverVersion != 12080 || !st.BatchAPI || st.Streams != DefaultStreams {
		t.Errorf("CUDA stats: %+v", st)
	}
}

func TestOpenModes(t *testing.T) {
	dev, err := Open(Config{Mode: "sim", Logger: quietLog()})
	if err != nil || dev.Name() != "sim" {
		t.Fatalf("Open(sim) = %v, %v", dev, err)
	}
	dev.Close()
	if _, err := Open(Config{Mode: "rocm", Logger: quietLog()}); !errors.Is(err, ErrMode) {
		t.Errorf("Open(rocm) = %v, want ErrMode", err)
	}
}
