package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/ucmfs/ucmfs/tiers"
	"github.com/urfave/cli/v3"
)

func init() { register(statsCommand) }

// statsCommand is `ucmfs stats`: a human view of MOUNTPOINT/.ucm/stats.
func statsCommand() *cli.Command {
	return &cli.Command{
		Name:      "stats",
		Usage:     "show the tiers and counters of a mounted ucmfs",
		ArgsUsage: "MOUNTPOINT",
		Description: "Reads MOUNTPOINT/.ucm/stats (a JSON snapshot) and prints, per tier, capacity,\n" +
			"use, files and health, then reads, publishes, copies between tiers, evictions,\n" +
			"drops, dirty data and errors, then the mount's own counters (control plane,\n" +
			"GPU, top-k); docs/control.md defines each.\n" +
			"--json prints the snapshot as it is. --watch prints it again every --interval,\n" +
			"with the rates per second since the previous view.",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print the raw JSON snapshot"},
			&cli.BoolFlag{Name: "watch", Aliases: []string{"w"}, Usage: "print it again every interval, with rates per second"},
			&cli.DurationFlag{Name: "interval", Aliases: []string{"i"}, Value: 2 * time.Second, Usage: "`DURATION` between views of --watch"},
			&cli.IntFlag{Name: "count", Aliases: []string{"n"}, Usage: "with --watch, stop after `N` views (0: until Ctrl-C)"},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.Args().Len() != 1 {
				return usageErrorf("stats: want exactly one MOUNTPOINT, got %d arguments", cmd.Args().Len())
			}
			if cmd.Bool("watch") {
				if cmd.Duration("interval") <= 0 || cmd.Bool("json") {
					return usageErrorf("stats: --watch needs an --interval > 0 and no --json")
				}
				read := func() ([]byte, error) { return readStats(cmd.Args().First()) }
				return watchStats(ctx, cmd.Root().Writer, read, cmd.Duration("interval"), int(cmd.Int("count")))
			}
			raw, err := readStats(cmd.Args().First())
			if err != nil {
				return err
			}
			w := cmd.Root().Writer
			if cmd.Bool("json") {
				_, err = w.Write(raw)
				return err
			}
			return printStats(w, raw)
		},
	}
}

// requireMount fails with readStats' message where mnt is not a live
// ucmfs mount: the commands that take MOUNTPOINT say so alike, before
// they touch anything under it.
func requireMount(mnt string) error {
	_, err := readStats(mnt)
	return err
}

// readStats reads the stats file of the mount at mnt.
func readStats(mnt string) ([]byte, error) {
	raw, err := os.ReadFile(filepath.Join(mnt, ".ucm", "stats"))
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("%s is not a ucmfs mount (no .ucm/stats)", mnt)
	case deadMount(err):
		return nil, fmt.Errorf("%s is a dead FUSE mount (its daemon died): run 'umount -l %s'", mnt, mnt)
	case err != nil:
		return nil, err
	}
	return raw, nil
}

// printStats writes the human view of a stats snapshot: the tier table,
// the counters, then any field this version does not know, as it is. It
// fits 80 columns and, with up to four tiers, 24 lines.
func printStats(w io.Writer, raw []byte) error {
	var st tiers.Stats
	if err := json.Unmarshal(raw, &st); err != nil {
		return fmt.Errorf("stats: not a stats snapshot: %w", err)
	}
	if err := printTierTable(w, raw, st); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, r := range stackRows(st) {
		fmt.Fprintf(tw, "%s\t%s\n", r[0], r[1])
	}
	for _, kv := range mountStatsRows(extraFields(raw)) {
		fmt.Fprintf(tw, "%s\t%s\n", kv[0], kv[1])
	}
	return tw.Flush()
}

// printTierTable writes one line per tier, then a blank line. FILES
// counts blocks and sidecars; PUBLISHED is the bytes clients published
// into the tier, OPENED those of the files opened for reading from it.
func printTierTable(w io.Writer, raw []byte, st tiers.Stats) error {
	var perTier struct {
		Tiers []struct {
			BytesIn  int64 `json:"bytes_in"`
			BytesOut int64 `json:"bytes_out"`
		} `json:"tiers"`
	}
	json.Unmarshal(raw, &perTier)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TIER\tCAPACITY\tUSED\tUSE%\tFILES\tHEALTH\tPUBLISHED\tOPENED")
	for i, t := range st.Tiers {
		pct := "-"
		if t.Capacity > 0 {
			pct = fmt.Sprintf("%.1f%%", 100*float64(t.Used)/float64(t.Capacity))
		}
		in, out := "-", "-"
		if i < len(perTier.Tiers) {
			in, out = formatSize(perTier.Tiers[i].BytesIn), formatSize(perTier.Tiers[i].BytesOut)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.Name, formatSize(t.Capacity), formatSize(t.Used), pct,
			humanize.Comma(t.Blocks), t.Health, in, out)
	}
	fmt.Fprintln(tw)
	return tw.Flush()
}

// stackRows are the stack's counters, labelled by what they count
// (docs/control.md, stats).
func stackRows(st tiers.Stats) [][2]string {
	n := humanize.Comma
	return [][2]string{
		{"reads", fmt.Sprintf("hits %s (memory %s, lower %s), misses %s",
			n(st.MemHits+st.LowerHits), n(st.MemHits), n(st.LowerHits), n(st.Misses))},
		{"published", fmt.Sprintf("%s files, %s (%s rejected, %s duplicates)",
			n(st.Published), formatSize(st.BytesIn), n(st.Rejected), n(st.Duplicates))},
		{"copied", fmt.Sprintf("%s: %s write-backs, %s promotions, %s demotions",
			formatSize(st.BytesOut), n(st.WriteBacks), n(st.Promotions), n(st.Demotions))},
		{"removed", fmt.Sprintf("%s evictions from memory, %s drops from the last tier", n(st.Evictions), n(st.Drops))},
		{"dirty", fmt.Sprintf("%s in %s files, %s queued for write-back",
			formatSize(st.DirtyBytes), n(st.DirtyFiles), n(int64(st.FlushQueue)))},
		{"writes", fmt.Sprintf("throttled %s, room waits %s, direct %s, tmpfs full %s",
			n(st.Throttles), n(st.RoomWaits), n(st.DirectWrites), n(st.MemFull))},
		{"errors", fmt.Sprintf("%s (write-back %s, crc %s, quarantined %s)",
			n(st.WriteBackErrors+st.CRCErrors), n(st.WriteBackErrors), n(st.CRCErrors), n(st.Quarantined))},
	}
}

// extraFields are the top-level fields of raw that tiers.Stats does not
// name (the mount adds its own), by name, values as JSON.
func extraFields(raw []byte) map[string]json.RawMessage {
	var all, known map[string]json.RawMessage
	if json.Unmarshal(raw, &all) != nil {
		return nil
	}
	empty, _ := json.Marshal(tiers.Stats{})
	json.Unmarshal(empty, &known)
	for k := range known {
		delete(all, k)
	}
	return all
}
