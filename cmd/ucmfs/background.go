package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/urfave/cli/v3"
)

// backgroundFlags are `ucmfs mount --background` and its log file.
func backgroundFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "background", Aliases: []string{"d"}, Category: catLifecycle,
			Usage: "start the daemon in the background and return once the mount is ready (stop it with 'ucmfs umount')"},
		&cli.StringFlag{Name: "log-file", Category: catLifecycle, TakesFile: true,
			Usage: "with --background, append the daemon's log to `FILE` (default /var/log/ucmfs/<mountpoint>.log as root, " +
				"else under ~/.local/state/ucmfs)"},
	}
}

// startBackground runs cfg as a background daemon: the effective
// configuration goes to a private temporary file that the daemon reads at
// start (so it runs with exactly cfg, paths already absolute), then the
// mount helper's start-and-wait (startDaemon) takes over.
func startBackground(ctx context.Context, cfg mountConfig, logFile string, stderr io.Writer) error {
	f, err := os.CreateTemp("", "ucmfs-config-*.yaml")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // read by the daemon before it says READY=1
	err = printConfig(f, cfg)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	req := helperRequest{MountArgs: []string{"--config", f.Name(), cfg.Mountpoint}, LogFile: logFile}
	if err := startDaemon(ctx, req); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "ucmfs: mounted on %s in the background; stop it with 'ucmfs umount %s'\n", cfg.Mountpoint, cfg.Mountpoint)
	return nil
}
