package main

import (
	"fmt"
	"io"
	"strings"
)

// cell is how the table shows op on target: the speed, and the ratio
// against the baseline.
func (r results) cell(op string, isIO bool, target string) string {
	s, ok := r.get(op, target)
	if !ok {
		return "-"
	}
	v := formatRate(s.rate()) + "/s"
	if isIO {
		v = fmt.Sprintf("%.2f GB/s", s.mbPerS/1000)
	}
	if target == baseline {
		return v
	}
	ratio, _ := r.ratio(op, target)
	return fmt.Sprintf("%s (%.2fx)", v, ratio)
}

// formatRate writes a rate with a k or M suffix.
func formatRate(x float64) string {
	switch {
	case x >= 10e6:
		return fmt.Sprintf("%.0fM", x/1e6)
	case x >= 1e6:
		return fmt.Sprintf("%.2fM", x/1e6)
	case x >= 100e3:
		return fmt.Sprintf("%.0fk", x/1e3)
	case x >= 1e3:
		return fmt.Sprintf("%.1fk", x/1e3)
	}
	return fmt.Sprintf("%.0f", x)
}

// verdict is one acceptance target of the issue and whether it holds.
type verdict struct {
	what, got, want string
	ok, known       bool
}

// verdicts checks the acceptance targets against the results.
func verdicts(r results, s *scaleResult) []verdict {
	var out []verdict
	ratio := func(what, op, target string, want float64) {
		v := verdict{what: what, want: fmt.Sprintf(">= %gx tmpfs", want)}
		if x, ok := r.ratio(op, target); ok {
			v.got, v.ok, v.known = fmt.Sprintf("%.2fx", x), x >= want, true
		}
		out = append(out, v)
	}
	ratio("write, bursts below the dirty threshold, passthrough", "WriteBurst2MiB", "passthrough", 0.9)
	out = append(out, againstNVMe(r, "write, sustained, passthrough", "Write2MiB", 0.8))
	ratio("read, resident in memory, passthrough", "Read2MiB", "passthrough", 0.95)
	ratio("read, 4 reader threads, passthrough", "Read2MiB4Threads", "passthrough", 0.95)
	ratio("read, 4 reader processes, passthrough", "Read2MiB4Procs", "passthrough", 0.95)
	ratio("fallback read", "Read2MiB", "fallback", 0.5)
	ratio("stat of hits, passthrough (warm)", "StatHit", "passthrough", 0.95)
	ratio("stat of hits, fallback (warm)", "StatHit", "fallback", 0.95)
	out = append(out, againstNVMe(r, "read, working set 3x memory, passthrough", "ReadSpill2MiB", 0.9))
	for _, t := range []string{"passthrough", "fallback"} {
		v := verdict{what: "stat of misses, " + t + ", one thread", want: ">= 40k/s"}
		if x, ok := r.get("StatMiss", t); ok {
			v.got, v.ok, v.known = formatRate(x.rate())+"/s", x.rate() >= 40e3, true
		}
		out = append(out, v)
	}
	if s == nil {
		return out
	}
	n := fmt.Sprintf("%dk blocks: ", s.Blocks/1000)
	readyLim := s.RSSReadyLim
	if readyLim == 0 { // a result from before the two budgets
		readyLim = s.RSSLimit
	}
	return append(out,
		verdict{n + "restart: start to ready", fmt.Sprintf("%.2f s", s.StartReady), "<= 2 s", s.StartReady <= 2, true},
		verdict{n + "daemon VmRSS when ready", fmt.Sprintf("%.1f MiB", mib(s.RSSReady)), fmt.Sprintf("<= %.1f MiB", mib(readyLim)), s.RSSReady <= readyLim, true},
		verdict{n + "daemon VmRSS after du -s twice", fmt.Sprintf("%.1f MiB", mib(s.RSSAfterDu)), fmt.Sprintf("<= %.1f MiB", mib(s.RSSLimit)), s.RSSAfterDu <= s.RSSLimit, true},
		verdict{n + "getxattr user.ucm.blocks of the model", fmt.Sprintf("%.2f ms", s.Getfattr*1e3), "<= 10 ms", s.Getfattr <= 0.010, s.GetfattrN > 0},
		verdict{n + "du -s of the model (first after restart)", fmt.Sprintf("%.2f s", s.DuCold), "<= 3 s", s.DuCold <= 3, true},
		verdict{n + "first stat of a block after the restart", formatRate(s.FirstStat) + "/s", ">= 40k/s", s.FirstStat >= 40e3, s.FirstStat > 0},
		verdict{n + "stat of a missing id", formatRate(s.MissStat) + "/s", ">= 40k/s", s.MissStat >= 40e3, s.MissStat > 0},
	)
}

// againstNVMe is the verdict of op through the passthrough mount against
// want times the nvme directory's figure of the same run.
func againstNVMe(r results, what, op string, want float64) verdict {
	v := verdict{what: what, want: fmt.Sprintf(">= %gx the nvme dir", want)}
	if x, ok := r.ratio(op, "passthrough"); ok {
		if n, ok := r.ratio(op, "nvme"); ok {
			v.got, v.ok, v.known = fmt.Sprintf("%.2fx nvme (%.2fx tmpfs)", x/n, x), x >= want*n, true
		}
	}
	return v
}

func (v verdict) status() string {
	switch {
	case !v.known:
		return "not measured"
	case v.ok:
		return "holds"
	}
	return "MISSED"
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

// writeTables writes the results as aligned text (md false) or as
// Markdown tables (md true).
func writeTables(w io.Writer, r results, s *scaleResult, md bool) {
	rows := [][]string{append([]string{"operation"}, targets...)}
	for _, op := range operations {
		row := []string{op.label}
		for _, t := range targets {
			row = append(row, r.cell(op.bench, op.io, t))
		}
		rows = append(rows, row)
	}
	writeGrid(w, rows, md)
	fmt.Fprintln(w)
	if s != nil {
		writeGrid(w, scaleRows(s), md)
		fmt.Fprintln(w)
	}
	rows = [][]string{{"acceptance target", "measured", "target", "verdict"}}
	for _, v := range verdicts(r, s) {
		rows = append(rows, []string{v.what, v.got, v.want, v.status()})
	}
	writeGrid(w, rows, md)
}

// scaleRows are the scale run's measurements.
func scaleRows(s *scaleResult) [][]string {
	rows := [][]string{
		{fmt.Sprintf("scale run: %d blocks of %d bytes, one model", s.Blocks, s.BlockBytes),
			fmt.Sprintf("median of %d restarts", max(s.Rounds, 1))},
		{"first start to ready (index rebuilt from the tier)", fmt.Sprintf("%.2f s", s.FirstStart)},
		{"restart: SIGTERM to exit + start to ready", fmt.Sprintf("%.2f s + %.2f s = %.2f s", s.Stop, s.StartReady, s.Restart)},
		{"`ls` of one shard (first after restart)", fmt.Sprintf("%.3f s (%d names)", s.LsShard, s.LsEntries)},
		{"`ls -l` of the same shard", fmt.Sprintf("%.3f s", s.LsLongShard)},
		{"`du -s` of the model: first after restart / again", fmt.Sprintf("%.2f s / %.2f s", s.DuCold, s.DuWarm)},
		{"daemon VmRSS: ready / after du -s twice", fmt.Sprintf("%.1f MiB / %.1f MiB", mib(s.RSSReady), mib(s.RSSAfterDu))},
		{"getxattr user.ucm.blocks of the model (first after restart)", fmt.Sprintf("%.3f ms (%d)", s.Getfattr*1e3, s.GetfattrN)},
		{"first stat of a block after restart / stat of a missing id, one thread", fmt.Sprintf("%s/s / %s/s", formatRate(s.FirstStat), formatRate(s.MissStat))},
	}
	if s.DropCaches {
		rows = append(rows, []string{"restart after dropping the kernel caches", fmt.Sprintf("%.2f s", s.ColdRestart)})
	}
	return rows
}

// writeGrid writes rows (the first is the header) as aligned text or as a
// Markdown table.
func writeGrid(w io.Writer, rows [][]string, md bool) {
	widths := make([]int, len(rows[0]))
	for _, row := range rows {
		for i, c := range row {
			widths[i] = max(widths[i], len(c))
		}
	}
	for n, row := range rows {
		cells := make([]string, len(row))
		for i, c := range row {
			cells[i] = c + strings.Repeat(" ", widths[i]-len(c))
		}
		if md {
			fmt.Fprintf(w, "| %s |\n", strings.Join(row, " | "))
			if n == 0 {
				fmt.Fprintf(w, "|%s\n", strings.Repeat("---|", len(row)))
			}
			continue
		}
		fmt.Fprintln(w, strings.TrimRight(strings.Join(cells, "  "), " "))
		if n == 0 {
			total := 0
			for _, wd := range widths {
				total += wd + 2
			}
			fmt.Fprintln(w, strings.Repeat("-", total-2))
		}
	}
}
