package tiers

import (
	"fmt"
	"testing"

	"github.com/ucmfs/ucmfs/format"
)

// BenchmarkScanResistance shows what the TinyLFU admission filter is for:
// a hot set that fits in memory is read over and over, then a one-time
// scan reads 16 times as many cold blocks once each. With admission (the
// default) the scan's blocks are not promoted, and the hot set stays in
// memory; without it (StackConfig.NoAdmission) every scanned block is
// promoted and the hot set is evicted. The metric hot-resident-% is the
// share of the hot set still in memory after the scan, hot-hits-% the
// share of a last pass over the hot set that memory served. Promotion is
// applied as the read path decides it (shouldPromote, then promote), in
// the benchmark's goroutine, so the figures do not depend on timing.
func BenchmarkScanResistance(b *testing.B) {
	const (
		block = 64 << 10
		hot   = 48
		cold  = 16 * hot
	)
	for _, on := range []bool{true, false} {
		b.Run(fmt.Sprintf("tinylfu=%v", on), func(b *testing.B) {
			var resident, hits float64
			for range b.N {
				s := newTestStack(b, 64*block+64*1024, b.TempDir(), StackConfig{NoAdmission: !on})
				keys := make([]format.Key, hot+cold)
				for i := range keys {
					k, d := testBlock("m", i, block-64)
					if _, err := s.Put(k, d, true); err != nil {
						b.Fatal(err)
					}
					keys[i] = k
				}
				for _, k := range keys { // start with every block on nvme only
					_ = s.Evict(k)
				}
				read := func(k format.Key) bool {
					if _, err := s.mem.Stat(k); err == nil {
						s.mem.Touch(k)
						return true
					}
					if s.shouldPromote(k, block) {
						if err := s.promote(s.dirs[0], k); err != nil {
							b.Fatal(err)
						}
					}
					return false
				}
				for range 8 {
					for _, k := range keys[:hot] {
						read(k)
					}
				}
				for _, k := range keys[hot:] {
					read(k)
				}
				n := 0
				for _, k := range keys[:hot] {
					if _, err := s.mem.Stat(k); err == nil {
						n++
					}
				}
				resident += float64(n) / hot
				n = 0
				for _, k := range keys[:hot] {
					if read(k) {
						n++
					}
				}
				hits += float64(n) / hot
			}
			b.ReportMetric(100*resident/float64(b.N), "hot-resident-%")
			b.ReportMetric(100*hits/float64(b.N), "hot-hits-%")
		})
	}
}
