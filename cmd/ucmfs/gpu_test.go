package main

import (
	"errors"
	"io"
	"log/slog"
	"testing"

	"github.com/ucmfs/ucmfs/gpu"
)

// TestGPUSetting: --gpu and the gpu key choose the device (auto by
// default, the flag over the file); other values are usage errors.
func TestGPUSetting(t *testing.T) {
	if cfg, code, msg := parseMount(t, "--memory-only", "/m"); code != exitOK || cfg.GPU != "auto" {
		t.Errorf("default: exit %d (%s), gpu %q", code, msg, cfg.GPU)
	}
	conf := writeTemp(t, t.TempDir(), "c.yaml", "gpu: off\n")
	if cfg, code, msg := parseMount(t, "--config", conf, "--memory-only", "/m"); code != exitOK || cfg.GPU != "off" {
		t.Errorf("from the file: exit %d (%s), gpu %q", code, msg, cfg.GPU)
	}
	if cfg, code, msg := parseMount(t, "--config", conf, "--gpu", "sim", "--memory-only", "/m"); code != exitOK || cfg.GPU != "sim" {
		t.Errorf("flag over the file: exit %d (%s), gpu %q", code, msg, cfg.GPU)
	}
	if _, code, msg := parseMount(t, "--gpu", "tpu", "--memory-only", "/m"); code != exitUsage || msg == "" {
		t.Errorf("--gpu tpu: exit %d (%q), want %d", code, msg, exitUsage)
	}
}

// TestOpenGPU: off gives no device, sim the simulated one, and cuda
// fails without a driver (where there is one, it opens it).
func TestOpenGPU(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if dev, err := openGPU("off", "", log); dev != nil || err != nil {
		t.Errorf("off: %v, %v", dev, err)
	}
	dev, err := openGPU("sim", "", log)
	if err != nil || dev.Name() != "sim" {
		t.Fatalf("sim: %v", err)
	}
	closeGPU(dev, log)
	dev, err = openGPU("cuda", "", log)
	switch {
	case errors.Is(err, gpu.ErrNoDevice):
		t.Logf("cuda without a driver: %v", err)
	case err != nil:
		t.Errorf("cuda: %v, want an error wrapping gpu.ErrNoDevice", err)
	default:
		closeGPU(dev, log)
	}
	closeGPU(nil, log)
}
