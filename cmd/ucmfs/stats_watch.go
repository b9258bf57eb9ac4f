package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/ucmfs/ucmfs/tiers"
)

// rateRows are the counters `ucmfs stats --watch` shows, with their
// totals and rates per second: a label, the snapshot fields summed, and
// whether they count bytes.
var rateRows = []struct {
	label  string
	fields []string
	bytes  bool
}{
	{"hits", []string{"mem_hits", "lower_hits"}, false},
	{"misses", []string{"misses"}, false},
	{"bytes opened", []string{"bytes_out_opened"}, true},
	{"published", []string{"published"}, false},
	{"bytes published", []string{"bytes_in"}, true},
	{"bytes copied between tiers", []string{"bytes_out"}, true},
	{"write-backs", []string{"write_backs"}, false},
	{"evictions from memory", []string{"evictions"}, false},
	{"drops from the last tier", []string{"drops"}, false},
	{"errors", []string{"write_back_errors", "crc_errors"}, false},
	{"lookup ids", []string{"lookup_ids"}, false},
	{"prefetch promotions", []string{"prefetch_promoted"}, false},
	{"GPU load bytes", []string{"gpu_load_bytes"}, true},
	{"GPU dump bytes", []string{"gpu_dump_bytes"}, true},
	{"top-k requests", []string{"topks"}, false},
}

// statsSample is one snapshot and when it was read.
type statsSample struct {
	raw []byte
	at  time.Time
}

// watchStats prints the stats view of the snapshot read returns every
// interval, each followed by the rates since the previous one, until ctx
// ends or count views were printed (count 0: no limit). On a terminal the
// screen is cleared before each view.
func watchStats(ctx context.Context, w io.Writer, read func() ([]byte, error), interval time.Duration, count int) error {
	clear := isTerminal(w)
	var prev *statsSample
	for n := 0; count == 0 || n < count; n++ {
		if n > 0 {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(interval):
			}
		}
		raw, err := read()
		if err != nil {
			return err
		}
		cur := &statsSample{raw: raw, at: time.Now()}
		if clear {
			fmt.Fprint(w, "\033[H\033[2J")
		} else if n > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%s  (every %v; Ctrl-C to stop)\n\n", cur.at.Format("15:04:05"), interval)
		if err := printWatch(w, prev, cur); err != nil {
			return err
		}
		prev = cur
	}
	return nil
}

// printWatch writes one view of --watch: the tier table, then each of
// rateRows with its total and, after the first view, its rate per second
// since the previous one; 80 columns, and 24 lines with up to 4 tiers.
func printWatch(w io.Writer, prev, cur *statsSample) error {
	var st tiers.Stats
	if err := json.Unmarshal(cur.raw, &st); err != nil {
		return fmt.Errorf("stats: not a stats snapshot: %w", err)
	}
	if err := printTierTable(w, cur.raw, st); err != nil {
		return err
	}
	var a, b map[string]any
	json.Unmarshal(cur.raw, &b)
	secs := 0.0
	if prev != nil && json.Unmarshal(prev.raw, &a) == nil {
		secs = cur.at.Sub(prev.at).Seconds()
	}
	addOpened(b, cur.raw)
	addOpened(a, nil)
	if prev != nil {
		addOpened(a, prev.raw)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := "per second"
	if secs > 0 {
		head = fmt.Sprintf("per second (last %.1f s)", secs)
	}
	fmt.Fprintf(tw, "\ttotal\t%s\n", head)
	for _, r := range rateRows {
		total, delta, present := 0.0, 0.0, false
		for _, f := range r.fields {
			y, ok := b[f].(float64)
			if !ok {
				continue
			}
			present = true
			total += y
			if x, ok := a[f].(float64); ok {
				delta += y - x
			}
		}
		if !present {
			continue
		}
		rate := "-"
		if secs > 0 {
			rate = formatRate(delta/secs, r.bytes)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.label, formatTotal(total, r.bytes), rate)
	}
	return tw.Flush()
}

// addOpened adds to m the field bytes_out_opened: the bytes of files
// opened for reading, summed over the tiers (each tier's bytes_out).
func addOpened(m map[string]any, raw []byte) {
	if m == nil || raw == nil {
		return
	}
	var perTier struct {
		Tiers []struct {
			BytesOut float64 `json:"bytes_out"`
		} `json:"tiers"`
	}
	if json.Unmarshal(raw, &perTier) != nil {
		return
	}
	sum := 0.0
	for _, t := range perTier.Tiers {
		sum += t.BytesOut
	}
	m["bytes_out_opened"] = sum
}

// formatTotal shows a counter's total.
func formatTotal(v float64, bytes bool) string {
	if bytes {
		return humanize.IBytes(uint64(max(v, 0)))
	}
	return humanize.Comma(int64(v))
}

// formatRate shows a rate per second.
func formatRate(rate float64, bytes bool) string {
	switch {
	case bytes:
		return humanize.IBytes(uint64(max(rate, 0))) + "/s"
	case rate >= 100:
		return humanize.Comma(int64(rate)) + "/s"
	}
	return fmt.Sprintf("%.1f/s", rate)
}
