package mem_test

import (
	"testing"

	"github.com/ucmfs/ucmfs/internal/tiertest"
	"github.com/ucmfs/ucmfs/tiers/mem"
)

// Benchmarks of the memory tier beside the raw file operations it wraps,
// on the same directory in the same run, so the ratios show what the tier
// costs (tiertest's Bench*):
//
//	go test -run '^$' -bench . ./tiers/mem/
//
// Mem* run on /dev/shm; Shm* do the same with plain os calls there.

func benchMem(b *testing.B) *mem.Tier {
	return newMem(b, mem.Config{Capacity: 256 << 20})
}

func BenchmarkMemWrite2MiB(b *testing.B) { tiertest.BenchWrite(b, benchMem(b)) }
func BenchmarkShmWrite2MiB(b *testing.B) { tiertest.BenchRawWrite(b, shmDir(b)) }
func BenchmarkMemRead2MiB(b *testing.B)  { tiertest.BenchRead(b, benchMem(b)) }
func BenchmarkShmRead2MiB(b *testing.B)  { tiertest.BenchRawRead(b, shmDir(b)) }
func BenchmarkMemStat(b *testing.B)      { tiertest.BenchStat(b, benchMem(b)) }
func BenchmarkShmStat(b *testing.B)      { tiertest.BenchRawStat(b, shmDir(b)) }
