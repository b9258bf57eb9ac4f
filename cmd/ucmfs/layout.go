package main

import (
	"fmt"

	"github.com/ucmfs/ucmfs/layout/registry"
	"github.com/ucmfs/ucmfs/store"
	"github.com/urfave/cli/v3"
)

// layoutFlag is --default-layout: the layout of every model made on the
// mount (docs/spec.md §2); a model's user.ucm.layout overrides it.
func layoutFlag() cli.Flag {
	return &cli.StringFlag{Name: "default-layout", Category: catControl, Value: registry.Default().Name(),
		Usage: "`LAYOUT` of every new model: ucmb (<hh>/<id>.bin with UCMB headers), ucm-posix " +
			"(UCM PosixStore's <shard>/<id> raw files) or files (any tree of raw files, as engines' " +
			"file backends write it); a model's user.ucm.layout overrides it"}
}

// applyLayout checks a default layout (from the flag or the
// default_layout key) and sets it.
func applyLayout(cfg *mountConfig, what, value string) error {
	l, err := store.ParseLayout(value)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	cfg.DefaultLayout = l
	if l == registry.Default().Name() {
		cfg.DefaultLayout = "" // the default
	}
	return nil
}

// layoutString is the default layout as the config file writes it.
func layoutString(l string) string {
	if l == "" {
		return registry.Default().Name()
	}
	return l
}
