package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"regexp"
	"slices"
	"strconv"
)

// The operations of the mount benchmarks (package bench), in table order:
// the benchmark name after "BenchmarkMount", how the table and the
// picture call it.
var operations = []struct {
	bench, label, short string
	io                  bool // a throughput (GB/s), else a rate (stats/s)
}{
	{"Write2MiB", "write 2 MiB (create, write, close)", "write 2 MiB", true},
	{"WriteBurst2MiB", "write 2 MiB, bursts below the dirty background threshold", "write burst", true},
	{"Read2MiB", "read 2 MiB (open, read, close)", "read 2 MiB", true},
	{"ReadSpill2MiB", "read 2 MiB, working set 3x the memory tier", "read, spill", true},
	{"Read2MiB4Threads", "read 2 MiB, 4 reader threads", "read, 4 threads", true},
	{"Read2MiB4Procs", "read 2 MiB, 4 reader processes", "read, 4 procs", true},
	{"StatHit", "stat, hit, kernel cache warm", "stat hit, warm", false},
	{"StatHitCold", "stat, hit, first after mount", "stat hit, cold", false},
	{"StatMiss", "stat, miss (new id each)", "stat miss", false},
}

// The targets of every operation, in column order; tmpfs is the baseline.
var targets = []string{"passthrough", "fallback", "tmpfs", "nvme"}

// baseline is the target every ratio is against.
const baseline = "tmpfs"

// sample is the median of one benchmark's runs.
type sample struct {
	nsPerOp float64
	mbPerS  float64 // 0 for stats
	runs    int
}

// results maps operation -> target -> sample.
type results map[string]map[string]sample

// get returns the sample of op on target.
func (r results) get(op, target string) (sample, bool) {
	s, ok := r[op][target]
	return s, ok && s.nsPerOp > 0
}

// ratio is target's speed over the baseline's (higher is better).
func (r results) ratio(op, target string) (float64, bool) {
	s, ok := r.get(op, target)
	b, okb := r.get(op, baseline)
	if !ok || !okb {
		return 0, false
	}
	return b.nsPerOp / s.nsPerOp, true
}

// rate is operations per second.
func (s sample) rate() float64 { return 1e9 / s.nsPerOp }

// benchLine matches a result line of `go test -bench` for package bench,
// a repeat (#01, ...) of a target or not:
// BenchmarkMountRead2MiB/passthrough#01-2  3676  381110 ns/op  5502.75 MB/s ...
var benchLine = regexp.MustCompile(`^BenchmarkMount(\w+)/(\w+)(?:#\d+)?(?:-\d+)?\s+\d+\s+([0-9.e+]+) ns/op(?:\s+([0-9.e+]+) MB/s)?`)

// parseBench reads `go test -bench` output and keeps, per benchmark, the
// median ns/op and MB/s of its runs (the rounds of UCMFS_BENCH_ROUNDS, or
// -count).
func parseBench(r io.Reader) (results, error) {
	type runs struct{ ns, mb []float64 }
	all := map[[2]string]*runs{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		m := benchLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		k := [2]string{m[1], m[2]}
		if all[k] == nil {
			all[k] = &runs{}
		}
		ns, err := strconv.ParseFloat(m[3], 64)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", sc.Text(), err)
		}
		all[k].ns = append(all[k].ns, ns)
		if m[4] != "" {
			mb, err := strconv.ParseFloat(m[4], 64)
			if err != nil {
				return nil, fmt.Errorf("%q: %w", sc.Text(), err)
			}
			all[k].mb = append(all[k].mb, mb)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	res := results{}
	for k, v := range all {
		if res[k[0]] == nil {
			res[k[0]] = map[string]sample{}
		}
		res[k[0]][k[1]] = sample{nsPerOp: median(v.ns), mbPerS: median(v.mb), runs: len(v.ns)}
	}
	return res, nil
}

// median of xs; 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}

// scaleResult mirrors bench.ScaleResult (the JSON of UCMFS_SCALE_OUT).
type scaleResult struct {
	Rounds      int     `json:"rounds"`
	Blocks      int     `json:"blocks"`
	BlockBytes  int     `json:"block_bytes"`
	TierBytes   int64   `json:"tier_bytes"`
	Populate    float64 `json:"populate_s"`
	FirstStart  float64 `json:"first_start_s"`
	Stop        float64 `json:"stop_s"`
	StartReady  float64 `json:"start_ready_s"`
	Restart     float64 `json:"restart_s"`
	LsShard     float64 `json:"ls_shard_s"`
	LsEntries   int     `json:"ls_entries"`
	LsLongShard float64 `json:"ls_l_shard_s"`
	DuCold      float64 `json:"du_cold_s"`
	DuWarm      float64 `json:"du_warm_s"`
	RSSReady    int64   `json:"rss_ready"`
	RSSAfterDu  int64   `json:"rss_after_du"`
	RSSLimit    int64   `json:"rss_limit"`
	RSSReadyLim int64   `json:"rss_ready_limit"`
	Getfattr    float64 `json:"getfattr_s"`
	GetfattrN   int64   `json:"getfattr_blocks"`
	FirstStat   float64 `json:"first_stat_per_s"`
	MissStat    float64 `json:"miss_stat_per_s"`
	DropCaches  bool    `json:"drop_caches"`
	ColdRestart float64 `json:"cold_restart_s"`
}

// readScale reads the scale run's JSON; a missing file is no scale run.
func readScale(path string) (*scaleResult, error) {
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var s scaleResult
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &s, nil
}
