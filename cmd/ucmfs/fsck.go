package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/urfave/cli/v3"
)

func init() { register(fsckCommand) }

// quarantineDir is where `fsck --repair` moves bad entries, under the tier
// directory, keeping their relative path.
const quarantineDir = ".quarantine"

// fsckConfig says which tier directory `ucmfs fsck` checks and whether it
// repairs it.
type fsckConfig struct {
	Dir    string
	Repair bool
}

// fsckCommand is `ucmfs fsck DIR [--repair]`: verify a tier directory.
func fsckCommand() *cli.Command {
	return &cli.Command{
		Name:      "fsck",
		Usage:     "verify a tier directory <DIR>/<model>/<hh>/<id>.bin|.repr",
		ArgsUsage: "DIR",
		Description: "Checks every entry of a tier directory: names and layout (docs/spec.md §2), headers and\n" +
			"payload CRC-32C (docs/spec.md §4-5), the user.ucm.crc32c xattr when present, and that every\n" +
			"sidecar has a valid block. Files whose name starts with '.' are leftover temporary\n" +
			"files: reported, not errors. Run it on a directory no daemon is using.\n" +
			"Exits 1 if anything is bad. With --repair, bad entries are moved to\n" +
			"<DIR>/.quarantine/<same path> and leftovers are removed.",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "repair", Usage: "move bad entries to DIR/.quarantine/ and remove leftovers"},
		},
		Action: func(_ context.Context, cmd *cli.Command) error {
			if cmd.Args().Len() != 1 {
				return usageErrorf("fsck: want exactly one DIR, got %d arguments", cmd.Args().Len())
			}
			cfg := fsckConfig{Dir: cmd.Args().First(), Repair: cmd.Bool("repair")}
			st, err := os.Stat(cfg.Dir)
			if err != nil {
				return usageErrorf("fsck: %v", err)
			}
			if !st.IsDir() {
				return usageErrorf("fsck: %s is not a directory", cfg.Dir)
			}
			sum, err := runFsck(cfg, cmd.Root().Writer)
			if err != nil {
				return &exitError{code: exitFail, err: fmt.Errorf("fsck: %w", err)}
			}
			if sum.Bad > 0 || sum.Errors > 0 {
				return failed()
			}
			return nil
		},
	}
}

// fsckSummary counts what a check found.
type fsckSummary struct {
	Blocks, Reprs int // files checked, by kind
	OK            int // files that passed
	Bad           int // entries that broke a rule
	Errors        int // entries that could not be checked (I/O)
	Leftovers     int // temporary files and directories ('.' names)
	Moved         int // bad entries moved to quarantine (--repair)
	Removed       int // leftovers removed (--repair)
}

// runFsck checks cfg.Dir, prints one line per problem and a summary line
// to w, and repairs when cfg.Repair is set. Its error is for the top
// directory only; problems inside are counted in the summary.
func runFsck(cfg fsckConfig, w io.Writer) (fsckSummary, error) {
	f := &fscker{root: cfg.Dir, repair: cfg.Repair, w: w}
	if err := f.walkRoot(); err != nil {
		return f.sum, err
	}
	s := f.sum
	fmt.Fprintf(w, "fsck %s: %d files checked (%d blocks, %d sidecars): %d ok, %d bad, %d errors, %d leftovers",
		cfg.Dir, s.Blocks+s.Reprs, s.Blocks, s.Reprs, s.OK, s.Bad, s.Errors, s.Leftovers)
	if cfg.Repair {
		fmt.Fprintf(w, "; repaired: %d moved to %s, %d leftovers removed", s.Moved, quarantineDir, s.Removed)
	}
	fmt.Fprintln(w)
	return s, nil
}
