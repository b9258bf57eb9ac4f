package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"

	"github.com/ucmfs/ucmfs/tiers"
	"github.com/urfave/cli/v3"
	"golang.org/x/sys/unix"
)

func init() { register(fsckCommand) }

// fsckConfig says which tier directory `ucmfs fsck` checks, whether it
// repairs it, and whether it shows progress.
type fsckConfig struct {
	Dir      string
	Repair   bool
	Progress bool // a count of entries checked on stderr every second
}

// fsckCommand is `ucmfs fsck DIR [--repair] [--progress]`: verify a tier
// directory (tiers.Fsck) and print what it found.
func fsckCommand() *cli.Command {
	return &cli.Command{
		Name:      "fsck",
		Usage:     "verify a tier directory <DIR>/<model>/<hh>/<id>.bin|.repr",
		ArgsUsage: "DIR",
		Description: "Checks every entry of a tier directory: names and layout (docs/spec.md §2), headers and\n" +
			"payload CRC-32C (docs/spec.md §4-5), the user.ucm.crc32c xattr when present, and that every\n" +
			"sidecar has a valid block. Files whose name starts with '.' are leftover temporary\n" +
			"files (a crashed writer's). Run it on a directory no daemon is using.\n" +
			"With --repair, bad entries are moved to <DIR>/.quarantine/<same path> and leftovers are\n" +
			"removed; it refuses a directory a running daemon holds. A count of entries checked goes\n" +
			"to stderr every second when stderr is a terminal, or with --progress.\n" +
			"Exits 0 when all is well, 1 if anything is bad, 2 on bad usage, 3 when --repair is refused\n" +
			"because a daemon holds the directory, 4 when the only findings are leftovers left in place.",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "repair", Usage: "move bad entries to DIR/.quarantine/ and remove leftovers"},
			&cli.BoolFlag{Name: "progress", Usage: "show a count of entries checked on stderr every second, even when it is not a terminal"},
		},
		Action: func(_ context.Context, cmd *cli.Command) error {
			if cmd.Args().Len() != 1 {
				return usageErrorf("fsck: want exactly one DIR, got %d arguments", cmd.Args().Len())
			}
			stderr := cmd.Root().ErrWriter
			cfg := fsckConfig{Dir: cmd.Args().First(), Repair: cmd.Bool("repair"),
				Progress: cmd.Bool("progress") || isTerminal(stderr)}
			st, err := os.Stat(cfg.Dir)
			if err != nil {
				return usageErrorf("fsck: %v", err)
			}
			if !st.IsDir() {
				return usageErrorf("fsck: %s is not a directory", cfg.Dir)
			}
			rep, err := runFsck(cfg, cmd.Root().Writer, stderr)
			if errors.Is(err, tiers.ErrLocked) {
				return &exitError{code: exitBusy, err: fmt.Errorf("fsck --repair: %w; stop the daemon (or unmount) first", err)}
			}
			if err != nil {
				return &exitError{code: exitFail, err: fmt.Errorf("fsck: %w", err)}
			}
			if rep.Bad > 0 || rep.Errors > 0 {
				return failed()
			}
			if rep.Leftovers > rep.Removed {
				return &exitError{code: exitLeftovers}
			}
			return nil
		},
	}
}

// runFsck checks cfg.Dir, prints one line per problem and a summary line
// to w, and with cfg.Progress the count of entries checked to progress
// every second and once at the end. Its error is for the top directory
// only; problems inside are counted in the report.
func runFsck(cfg fsckConfig, w, progress io.Writer) (tiers.FsckReport, error) {
	opts := tiers.FsckOptions{Repair: cfg.Repair, Finding: func(f tiers.Finding) { printFinding(w, f) }}
	if cfg.Progress {
		var n atomic.Int64
		opts.Progress = n.Store
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			tick := time.NewTicker(time.Second)
			defer tick.Stop()
			for {
				select {
				case <-tick.C:
					fmt.Fprintf(progress, "fsck %s: %d entries checked...\n", cfg.Dir, n.Load())
				case <-stop:
					return
				}
			}
		}()
		defer func() {
			close(stop)
			<-done
			fmt.Fprintf(progress, "fsck %s: %d entries checked\n", cfg.Dir, n.Load())
		}()
	}
	rep, err := tiers.Fsck(cfg.Dir, opts)
	if err != nil {
		return rep, err
	}
	fmt.Fprintf(w, "fsck %s: %d files checked (%d blocks, %d sidecars): %d ok, %d bad, %d errors, %d leftovers",
		cfg.Dir, rep.Blocks+rep.Reprs, rep.Blocks, rep.Reprs, rep.OK, rep.Bad, rep.Errors, rep.Leftovers)
	if cfg.Repair {
		fmt.Fprintf(w, "; repaired: %d moved to %s, %d leftovers removed", rep.Moved, tiers.QuarantineDir, rep.Removed)
	}
	fmt.Fprintln(w)
	return rep, nil
}

// printFinding prints one line for a problem fsck found.
func printFinding(w io.Writer, f tiers.Finding) {
	switch f.Kind {
	case tiers.FindingBad:
		switch {
		case f.RepairErr != nil:
			fmt.Fprintf(w, "bad %s: %v; NOT moved: %v\n", f.Path, f.Err, f.RepairErr)
		case f.Moved != "":
			fmt.Fprintf(w, "bad %s: %v; moved to %s\n", f.Path, f.Err, f.Moved)
		default:
			fmt.Fprintf(w, "bad %s: %v\n", f.Path, f.Err)
		}
	case tiers.FindingLeftover:
		switch {
		case f.RepairErr != nil:
			fmt.Fprintf(w, "leftover %s: NOT removed: %v\n", f.Path, f.RepairErr)
		case f.Removed:
			fmt.Fprintf(w, "leftover %s: removed\n", f.Path)
		default:
			fmt.Fprintf(w, "leftover %s\n", f.Path)
		}
	default:
		fmt.Fprintf(w, "error %s: %v\n", f.Path, f.Err)
	}
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
