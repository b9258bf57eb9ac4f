package bench

import (
	"slices"
	"testing"
	"time"
)

// latencies records how long each timed operation of a benchmark took,
// for the tail: the per-op benchmarks report p50, p99 and the maximum
// beside the mean (ns/op), in µs (p50-us, p99-us, max-us), since a mean
// hides the requests that wait on a collector, a lock or a wake-up.
type latencies struct {
	d []time.Duration
}

// newLatencies makes room for n operations.
func newLatencies(n int) *latencies { return &latencies{d: make([]time.Duration, 0, n)} }

// time runs op and records how long it took.
func (l *latencies) time(op func() error) error {
	t0 := time.Now()
	err := op()
	l.d = append(l.d, time.Since(t0))
	return err
}

// add records one operation that took d.
func (l *latencies) add(d time.Duration) { l.d = append(l.d, d) }

// report adds p50-us, p99-us and max-us to the benchmark's line.
func (l *latencies) report(b *testing.B) {
	if len(l.d) == 0 {
		return
	}
	s := slices.Clone(l.d)
	slices.Sort(s)
	us := func(d time.Duration) float64 { return float64(d) / 1e3 }
	b.ReportMetric(us(s[len(s)/2]), "p50-us")
	b.ReportMetric(us(s[min(len(s)-1, len(s)*99/100)]), "p99-us")
	b.ReportMetric(us(s[len(s)-1]), "max-us")
}
