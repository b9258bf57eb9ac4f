package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// The anchor tables (-anchor): every ucmfs figure of package bench as a
// ratio to libfuse's passthrough_hp on the same transport, round by
// round, for one or more runs (the binary before and after a change).

// anchorWorkload is one benchmark of the anchor's set and how it is shown.
type anchorWorkload struct {
	bench, label string
	perOp        bool   // times in µs with p50/p99/max (lower is better), else GB/s
	base         string // the target ucmfs is compared with on /dev/fuse
	raw          string // the plain directory beside it
}

var anchorWorkloads = []anchorWorkload{
	{"MountOpenClose", "open+close of a published block", true, "passthrough_hp", "tmpfs_tier"},
	{"MountStatMiss", "stat of a missing name (LOOKUP)", true, "passthrough_hp", "tmpfs_tier"},
	{"MountStatHitCold", "stat of a block, cold kernel cache (LOOKUP)", true, "passthrough_hp", "tmpfs"},
	{"MountGetattr", "GETATTR (statx, AT_STATX_FORCE_SYNC)", true, "passthrough_hp", "tmpfs_tier"},
	{"MountRead2MiB", "2 MiB read, resident (open+read+close)", false, "passthrough_hp", "tmpfs_tier"},
	{"UCMLoad2MiB/psync", "UCM PosixStore load, psync, 4 threads", false, "passthrough_hp", "tmpfs_tier"},
	{"UCMLoad2MiB/direct", "UCM PosixStore load, O_DIRECT, 4 threads", false, "passthrough_hp", "nvme"},
	{"MountWrite2MiB", "2 MiB write into a full tier, write-back running", false, "disk_sync", "nvme"},
}

// anchorRun is one run's results: benchmark -> target -> its rounds, each
// a unit -> value map ("ns/op", "MB/s", "p99-us", ...).
type anchorRun map[string]map[string][]map[string]float64

// anyLine matches any result line of package bench: name, target, the
// rest (value unit pairs).
var anyLine = regexp.MustCompile(`^Benchmark(\S+)/(\w+)(?:#\d+)?(?:-\d+)?\s+\d+\s+(.*)$`)

// parseAnchor reads `go test -bench` output.
func parseAnchor(r io.Reader) (anchorRun, error) {
	run := anchorRun{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		m := anyLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		f := strings.Fields(m[3])
		vals := map[string]float64{}
		for i := 0; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("%q: %w", sc.Text(), err)
			}
			vals[f[i+1]] = v
		}
		if run[m[1]] == nil {
			run[m[1]] = map[string][]map[string]float64{}
		}
		run[m[1]][m[2]] = append(run[m[1]][m[2]], vals)
	}
	return run, sc.Err()
}

// value is what a round shows for w: µs an op (unit "" is the mean), or
// GB/s.
func (w anchorWorkload) value(round map[string]float64, unit string) (float64, bool) {
	if !w.perOp {
		v, ok := round["MB/s"]
		return v / 1000, ok
	}
	if unit == "" {
		v, ok := round["ns/op"]
		return v / 1000, ok
	}
	v, ok := round[unit]
	return v, ok
}

// series formats one target's rounds of unit, and ratios to base's.
func (w anchorWorkload) series(rounds, base []map[string]float64, unit string) string {
	var vals, ratios []string
	for i, r := range rounds {
		v, ok := w.value(r, unit)
		if !ok {
			continue
		}
		vals = append(vals, fmt.Sprintf("%.3g", v))
		if i < len(base) {
			if b, ok := w.value(base[i], unit); ok && b > 0 {
				ratios = append(ratios, fmt.Sprintf("%.2f", v/b))
			}
		}
	}
	if len(vals) == 0 {
		return "-"
	}
	s := strings.Join(vals, ", ")
	if len(ratios) > 0 {
		s += " (" + strings.Join(ratios, ", ") + "x)"
	}
	return s
}

// writeAnchor prints one Markdown table per workload: a row per run and
// figure; columns ucmfs and its base on /dev/fuse, then on io_uring, the
// raw directory.
func writeAnchor(w io.Writer, labels []string, runs []anchorRun) {
	fmt.Fprintln(w, "Values per round; in parentheses each ucmfs round over the base's same round (per-op: time ratio, lower is better; GB/s: higher is better).")
	for _, wl := range anchorWorkloads {
		if !anyHas(runs, wl.bench) {
			continue
		}
		unitName := "GB/s"
		units := []string{""}
		if wl.perOp {
			unitName = "µs"
			units = []string{"", "p50-us", "p99-us", "max-us"}
		}
		baseU := wl.base
		if baseU == "passthrough_hp" {
			baseU = "passthrough_hp_uring"
		}
		fmt.Fprintf(w, "\n### %s (%s)\n\n", wl.label, unitName)
		fmt.Fprintf(w, "| run | figure | ucmfs /dev/fuse | %s | ucmfs io_uring | %s | raw dir (%s) |\n|---|---|---|---|---|---|---|\n", wl.base, baseU, wl.raw)
		for i, run := range runs {
			ts := run[wl.bench]
			if ts == nil {
				continue
			}
			for _, u := range units {
				name := map[string]string{"": "mean", "p50-us": "p50", "p99-us": "p99", "max-us": "max"}[u]
				if !wl.perOp {
					name = "GB/s"
				}
				fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s |\n", labels[i], name,
					wl.series(ts["passthrough"], ts[wl.base], u), wl.series(ts[wl.base], nil, u),
					wl.series(ts["uring"], ts[baseU], u), wl.series(ts[baseU], nil, u),
					wl.series(ts[wl.raw], nil, u))
			}
		}
	}
}

// anyHas reports whether a run has results of bench.
func anyHas(runs []anchorRun, bench string) bool {
	for _, r := range runs {
		if r[bench] != nil {
			return true
		}
	}
	return false
}

// runAnchor reads the runs of spec ("label=FILE,label=FILE") and prints
// their tables.
func runAnchor(spec string, stdout io.Writer) error {
	var labels []string
	var runs []anchorRun
	for _, part := range strings.Split(spec, ",") {
		label, path, ok := strings.Cut(part, "=")
		if !ok {
			label, path = part, part
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		run, err := parseAnchor(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		labels, runs = append(labels, label), append(runs, run)
	}
	writeAnchor(stdout, labels, runs)
	return nil
}
