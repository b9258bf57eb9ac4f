package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/dustin/go-humanize"
)

// rateRows are the counters `ucmfs stats --watch` shows per second: a
// label, the snapshot fields summed, and whether they count bytes.
var rateRows = []struct {
	label  string
	fields []string
	bytes  bool
}{
	{"hits", []string{"mem_hits", "lower_hits"}, false},
	{"misses", []string{"misses"}, false},
	{"published", []string{"published"}, false},
	{"bytes in", []string{"bytes_in"}, true},
	{"bytes out", []string{"bytes_out"}, true},
	{"write-backs", []string{"write_backs"}, false},
	{"evictions", []string{"evictions"}, false},
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
		if err := printStats(w, raw); err != nil {
			return err
		}
		if prev != nil {
			if err := printRates(w, prev, cur); err != nil {
				return err
			}
		}
		prev = cur
	}
	return nil
}

// printRates writes the per-second rates of rateRows between two samples.
func printRates(w io.Writer, prev, cur *statsSample) error {
	var a, b map[string]any
	if json.Unmarshal(prev.raw, &a) != nil || json.Unmarshal(cur.raw, &b) != nil {
		return fmt.Errorf("stats: not a stats snapshot")
	}
	secs := cur.at.Sub(prev.at).Seconds()
	if secs <= 0 {
		return nil
	}
	fmt.Fprintf(w, "\nper second, over the last %.1f s\n", secs)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, r := range rateRows {
		var delta float64
		present := false
		for _, f := range r.fields {
			x, okx := a[f].(float64)
			y, oky := b[f].(float64)
			if okx && oky {
				delta += y - x
				present = true
			}
		}
		if !present {
			continue
		}
		rate := delta / secs
		text := fmt.Sprintf("%.1f/s", rate)
		if rate >= 100 {
			text = humanize.Comma(int64(rate)) + "/s"
		}
		if r.bytes {
			text = humanize.IBytes(uint64(max(rate, 0))) + "/s"
		}
		fmt.Fprintf(tw, "%s\t%s\n", r.label, text)
	}
	return tw.Flush()
}
