package main

import (
	"fmt"
	"net"
	"os/user"
	"strconv"

	"github.com/ucmfs/ucmfs/store"
	"github.com/urfave/cli/v3"
)

// catControl is the flag category of the control plane.
const catControl = "Control plane"

// controlFlags are the control file and metrics flags.
func controlFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "control-group", Category: catControl,
			Usage: "let members of `GROUP` (name or gid) use MNT/.ucm/lookup, prefetch, flush, gpu and topk (mode 0660); " +
				"default: the mounting user only (0600)"},
		&cli.StringFlag{Name: "metrics-addr", Category: catControl,
			Usage: "serve Prometheus metrics on http://`HOST:PORT`/metrics (off by default; port 0 picks a free one)"},
		gpuFlag(),
		gpuSocketFlag(),
		&cli.StringFlag{Name: "cuda-library", Category: catControl,
			Usage: "the CUDA driver `LIBRARY` --gpu auto and cuda load (default libcuda.so.1, found by the dynamic loader)"},
		&cli.StringFlag{Name: "repr-kind", Category: catControl, Value: "mean",
			Usage: "sidecar `KIND` derived for a block that has none stored: mean, max, merged[:N], signhash[:BITS] " +
				"or none; a model's user.ucm.repr_kind overrides it"},
		layoutFlag(),
	}
}

// applyControlFlags overlays the control plane flags the user set.
func applyControlFlags(cmd *cli.Command, cfg *mountConfig) error {
	if cmd.IsSet("control-group") {
		cfg.ControlGroup = cmd.String("control-group")
	}
	if cmd.IsSet("metrics-addr") {
		cfg.MetricsAddr = cmd.String("metrics-addr")
	}
	if cmd.IsSet("gpu") {
		cfg.GPU = cmd.String("gpu")
	}
	if cmd.IsSet("cuda-library") {
		cfg.CUDALibrary = cmd.String("cuda-library")
	}
	if cmd.IsSet("gpu-socket") {
		cfg.GPUSocket = cmd.String("gpu-socket")
	}
	if cmd.IsSet("repr-kind") {
		r, err := store.ParseReprSetting(cmd.String("repr-kind"))
		if err != nil {
			return fmt.Errorf("--repr-kind: %w", err)
		}
		cfg.Repr = r
	}
	if cmd.IsSet("default-layout") {
		return applyLayout(cfg, "--default-layout", cmd.String("default-layout"))
	}
	return nil
}

// checkControl checks the control plane settings: the group must exist,
// the metrics address must be HOST:PORT and the gpu mode one of gpuModes.
func checkControl(cfg mountConfig) error {
	if err := checkGPU(cfg.GPU); err != nil {
		return err
	}
	if g := cfg.ControlGroup; g != "" {
		if _, err := strconv.ParseUint(g, 10, 32); err != nil {
			if _, err := user.LookupGroup(g); err != nil {
				return fmt.Errorf("control group %q: %w", g, err)
			}
		}
	}
	if a := cfg.MetricsAddr; a != "" {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return fmt.Errorf("metrics address %q: want HOST:PORT (:9105 for every interface): %w", a, err)
		}
	}
	return nil
}
