package dir_test

import (
	"testing"

	"github.com/ucmfs/ucmfs/internal/tiertest"
	"github.com/ucmfs/ucmfs/tiers/dir"
)

// Benchmarks of the directory tier beside the raw file operations it
// wraps, on the same directory in the same run, so the ratios show what
// the tier costs (tiertest's Bench*):
//
//	go test -run '^$' -bench . ./tiers/dir/
//
// Dir* run on a directory of the test's temp dir (a real disk); Raw* do
// the same with plain os calls there.

func benchDir(b *testing.B) *dir.Tier {
	return newDir(b, dir.Config{Kind: "nvme", Capacity: 1 << 40})
}

func BenchmarkDirWrite2MiB(b *testing.B) { tiertest.BenchWrite(b, benchDir(b)) }
func BenchmarkRawWrite2MiB(b *testing.B) { tiertest.BenchRawWrite(b, b.TempDir()) }
func BenchmarkDirRead2MiB(b *testing.B)  { tiertest.BenchRead(b, benchDir(b)) }
func BenchmarkRawRead2MiB(b *testing.B)  { tiertest.BenchRawRead(b, b.TempDir()) }
func BenchmarkDirStat(b *testing.B)      { tiertest.BenchStat(b, benchDir(b)) }
func BenchmarkRawStat(b *testing.B)      { tiertest.BenchRawStat(b, b.TempDir()) }
