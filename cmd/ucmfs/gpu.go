package main

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/ucmfs/ucmfs/gpu"
	"github.com/urfave/cli/v3"
)

// gpuModes are the values of --gpu (config key gpu).
var gpuModes = []string{"auto", "cuda", "sim", "off"}

// gpuFlag chooses the device of MNT/.ucm/gpu.
func gpuFlag() cli.Flag {
	return &cli.StringFlag{Name: "gpu", Category: catControl, Value: "auto",
		Usage: "device of MNT/.ucm/gpu: `MODE` auto (CUDA when libcuda.so.1 loads and a GPU is there, " +
			"else the simulated device, with a warning saying why; 'ucmfs gpu probe' shows what the driver offers), " +
			"cuda (fail without one), sim, or off (no .ucm/gpu)"}
}

// checkGPU checks the gpu setting.
func checkGPU(mode string) error {
	if !slices.Contains(gpuModes, mode) {
		return fmt.Errorf("gpu %q: want one of %s", mode, strings.Join(gpuModes, ", "))
	}
	return nil
}

// openGPU opens the device mode asks for; off gives none (nil). The
// device logs which one it is and why.
func openGPU(mode string, log *slog.Logger) (gpu.Device, error) {
	if mode == "off" {
		return nil, nil
	}
	dev, err := gpu.Open(gpu.Config{Mode: mode, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("--gpu %s: %w (--gpu sim or --gpu off run without a GPU)", mode, err)
	}
	return dev, nil
}

// closeGPU closes the device, after the stack: the memory tier
// unregisters its mappings when it closes.
func closeGPU(dev gpu.Device, log *slog.Logger) {
	if dev == nil {
		return
	}
	if err := dev.Close(); err != nil {
		log.Warn("closing the gpu device", "err", err)
	}
}
