package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/urfave/cli/v3"
	"golang.org/x/sys/unix"
)

func init() { register(topCommand) }

// topCommand is `ucmfs top`: the models of a mount by size.
func topCommand() *cli.Command {
	return &cli.Command{
		Name:      "top",
		Usage:     "show the models of a mount: blocks, bytes, quota, growth",
		ArgsUsage: "MOUNTPOINT",
		Description: "Reads user.ucm.blocks, bytes and quota of every model directory and prints\n" +
			"them, largest first. --watch prints it again every --interval with each model's\n" +
			"growth per second.",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "watch", Aliases: []string{"w"}, Usage: "print it again every interval"},
			&cli.DurationFlag{Name: "interval", Aliases: []string{"i"}, Value: 2 * time.Second, Usage: "`DURATION` between views of --watch"},
			&cli.IntFlag{Name: "count", Aliases: []string{"n"}, Usage: "with --watch, stop after `N` views (0: until Ctrl-C)"},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.Args().Len() != 1 {
				return usageErrorf("top: want exactly one MOUNTPOINT, got %d arguments", cmd.Args().Len())
			}
			mnt := cmd.Args().First()
			if _, err := readStats(mnt); err != nil {
				return err
			}
			count := int(cmd.Int("count"))
			if !cmd.Bool("watch") {
				count = 1
			}
			w := cmd.Root().Writer
			var prev map[string]modelUsage
			var prevAt time.Time
			for n := 0; count == 0 || n < count; n++ {
				if n > 0 {
					select {
					case <-ctx.Done():
						return nil
					case <-time.After(cmd.Duration("interval")):
					}
					if isTerminal(w) {
						fmt.Fprint(w, "\033[H\033[2J")
					} else {
						fmt.Fprintln(w)
					}
				}
				cur, err := modelUsages(mnt)
				if err != nil {
					return err
				}
				now := time.Now()
				printTop(w, cur, prev, now.Sub(prevAt))
				prev, prevAt = cur, now
			}
			return nil
		},
	}
}

// modelUsage is what the xattrs of one model directory say.
type modelUsage struct{ blocks, bytes, quota int64 }

// modelUsages reads the usage of every model directory of mnt.
func modelUsages(mnt string) (map[string]modelUsage, error) {
	entries, err := os.ReadDir(mnt)
	if err != nil {
		return nil, err
	}
	out := map[string]modelUsage{}
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		dir := filepath.Join(mnt, e.Name())
		out[e.Name()] = modelUsage{blocks: xattrInt(dir, "blocks"), bytes: xattrInt(dir, "bytes"), quota: xattrInt(dir, "quota")}
	}
	return out, nil
}

// xattrInt reads user.ucm.<name> of path as a number; -1 when it cannot.
func xattrInt(path, name string) int64 {
	buf := make([]byte, 64)
	n, err := unix.Getxattr(path, "user.ucm."+name, buf)
	if err != nil {
		return -1
	}
	v, err := strconv.ParseInt(string(buf[:n]), 10, 64)
	if err != nil {
		return -1
	}
	return v
}

// printTop writes the table, largest model first; with a previous view,
// the growth per second since then.
func printTop(w io.Writer, cur, prev map[string]modelUsage, since time.Duration) {
	names := make([]string, 0, len(cur))
	for n := range cur {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int {
		if c := cur[b].bytes - cur[a].bytes; c != 0 {
			return int(max(min(c, 1), -1))
		}
		return strings.Compare(a, b)
	})
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "MODEL\tBLOCKS\tBYTES\tQUOTA\tQUOTA%\tGROWTH")
	for _, n := range names {
		u := cur[n]
		quota, pct, growth := "-", "-", "-"
		if u.quota > 0 {
			quota, pct = humanize.IBytes(uint64(u.quota)), fmt.Sprintf("%.1f%%", 100*float64(u.bytes)/float64(u.quota))
		}
		if p, ok := prev[n]; ok && since > 0 {
			d := float64(u.bytes-p.bytes) / since.Seconds()
			growth = humanize.IBytes(uint64(max(d, 0))) + "/s"
			if d < 0 {
				growth = "-" + humanize.IBytes(uint64(-d)) + "/s"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", n, humanize.Comma(u.blocks), humanize.IBytes(uint64(max(u.bytes, 0))), quota, pct, growth)
	}
	tw.Flush()
}
