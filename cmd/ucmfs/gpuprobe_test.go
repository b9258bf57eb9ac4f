package main

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/ucmfs/ucmfs/gpu"
	"github.com/ucmfs/ucmfs/internal/engine"
)

// fakeCUDA builds the gpu package's stand-in CUDA driver and returns its
// path; it skips where no C compiler is installed.
func fakeCUDA(t *testing.T) string {
	t.Helper()
	lib, err := engine.BuildStandIn("../../gpu/testdata/fakecuda.c", t.TempDir())
	if errors.Is(err, engine.ErrNoCompiler) {
		t.Skip("no C compiler (cc or gcc) to build the stand-in CUDA driver gpu/testdata/fakecuda.c")
	}
	if err != nil {
		t.Fatal(err)
	}
	return lib
}

// TestGPUProbe: gpu probe prints the driver, every GPU with its UUID and
// PCI bus id and the attributes ucmfs depends on, as text and as JSON;
// without a driver it fails saying auto would fall back.
func TestGPUProbe(t *testing.T) {
	lib := fakeCUDA(t)
	code, out, errs := runMain(t, "gpu", "probe", "--library", lib)
	if code != exitOK || errs != "" {
		t.Fatalf("gpu probe: %d %q", code, errs)
	}
	for _, want := range []string{"CUDA 12.8 (12080), 4 GPUs", "cuda:3  Fake CUDA Device", "GPU-fa4ec0da-0000-4000-8000-000000000002",
		"pci bus id", "00000000:11:00.0", "read-only host register", "unified addressing", "virtual memory management", "VMM POSIX fd handles"} {
		if !strings.Contains(out, want) {
			t.Errorf("gpu probe output lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = runMain(t, "gpu", "probe", "--library", lib, "--json")
	var p gpu.ProbeResult
	if err := json.Unmarshal([]byte(out), &p); code != exitOK || err != nil || len(p.Devices) != 4 || !p.Devices[0].ReadOnlyHostRegister {
		t.Fatalf("gpu probe --json: %d %v %+v", code, err, p)
	}
	code, _, errs = runMain(t, "gpu", "probe", "--library", "/nonexistent/libcuda.so.1")
	if code != exitFail || !strings.Contains(errs, "fall back") {
		t.Errorf("gpu probe without a driver: %d %q", code, errs)
	}
	if code, _, _ := runMain(t, "gpu", "probe", "extra"); code != exitUsage {
		t.Errorf("gpu probe with an argument: %d", code)
	}
}
