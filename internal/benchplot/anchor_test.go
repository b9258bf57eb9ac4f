package main

import (
	"strings"
	"testing"
)

// TestAnchorRatios: each ucmfs round is divided by the C server's same
// round, per-op figures in µs, throughputs in GB/s.
func TestAnchorRatios(t *testing.T) {
	out := `BenchmarkMountStatMiss/passthrough-2   1000   10000 ns/op   8.0 p50-us   100 p99-us   900 max-us   100000 stats/s
BenchmarkMountStatMiss/passthrough_hp-2   1000   8000 ns/op   8.0 p50-us   50 p99-us   300 max-us   125000 stats/s
BenchmarkMountStatMiss/passthrough#01-2   1000   12000 ns/op   9.0 p50-us   100 p99-us   900 max-us   1 stats/s
BenchmarkMountStatMiss/passthrough_hp#01-2   1000   10000 ns/op   9.0 p50-us   50 p99-us   300 max-us   1 stats/s
BenchmarkUCMLoad2MiB/psync/passthrough-2   100   500000 ns/op   4000 MB/s   100 mem-%
BenchmarkUCMLoad2MiB/psync/passthrough_hp-2   100   400000 ns/op   5000 MB/s
`
	run, err := parseAnchor(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	writeAnchor(&b, []string{"after"}, []anchorRun{run})
	for _, want := range []string{
		"| after | mean | 10, 12 (1.25, 1.20x) | 8, 10 |",
		"| after | p99 | 100, 100 (2.00, 2.00x) |",
		"| after | GB/s | 4 (0.80x) | 5 |",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("no %q in\n%s", want, b.String())
		}
	}
}
