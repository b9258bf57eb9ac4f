package tiers_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ucmfs/ucmfs/internal/tiertest"
	"github.com/ucmfs/ucmfs/tiers"
)

// Benchmarks of the tiers beside the raw file operations they wrap, on the
// same directory in the same run, so the ratios show what a tier costs:
//
//	go test -run '^$' -bench . ./tiers/
//
// Dir* run on a directory of the test's temp dir (a real disk), Mem* on
// /dev/shm; Raw* and Shm* do the same with plain os calls there.

const (
	blockBytes = 2 << 20
	writeRing  = 32 // files written before the set is removed (untimed)
	readSet    = 32
)

// benchWrite times put(i) for b.N files, removing each ring of files
// outside the timer to keep disk use bounded.
func benchWrite(b *testing.B, put func(i int), clear func(n int)) {
	b.SetBytes(blockBytes)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i > 0 && i%writeRing == 0 {
			b.StopTimer()
			clear(writeRing)
			b.StartTimer()
		}
		put(i % writeRing)
	}
	b.StopTimer()
	clear(writeRing)
}

// rawPath is the path of the i-th benchmark block under root.
func rawPath(root string, i int) string {
	return filepath.Join(root, tiertest.Key("bench", i).Path())
}

// rawPut publishes data as the raw equivalent of a tier commit: a temp
// file in the same directory, written, closed and renamed.
func rawPut(b *testing.B, root string, i int, data []byte) {
	dst := rawPath(root, i)
	f, err := os.CreateTemp(filepath.Dir(dst), ".tmp-*")
	if err != nil {
		b.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	if err := os.Rename(f.Name(), dst); err != nil {
		b.Fatal(err)
	}
}

// rawPrepare creates the shard directories of the first n blocks.
func rawPrepare(b *testing.B, root string, n int) {
	for i := 0; i < n; i++ {
		if err := os.MkdirAll(filepath.Dir(rawPath(root, i)), 0o755); err != nil {
			b.Fatal(err)
		}
	}
}

func benchTierWrite(b *testing.B, tier tiers.Tier) {
	data := tiertest.Payload(1, blockBytes)
	benchWrite(b, func(i int) {
		tiertest.Put(b, tier, tiertest.Key("bench", i), data, tiers.CommitOptions{})
	}, func(n int) {
		for i := 0; i < n; i++ {
			tier.Remove(tiertest.Key("bench", i))
		}
	})
}

func benchRawWrite(b *testing.B, root string) {
	data := tiertest.Payload(1, blockBytes)
	rawPrepare(b, root, writeRing)
	benchWrite(b, func(i int) { rawPut(b, root, i, data) }, func(n int) {
		for i := 0; i < n; i++ {
			os.Remove(rawPath(root, i))
		}
	})
}

func benchTierRead(b *testing.B, tier tiers.Tier) {
	data := tiertest.Payload(1, blockBytes)
	for i := 0; i < readSet; i++ {
		tiertest.Put(b, tier, tiertest.Key("bench", i), data, tiers.CommitOptions{})
	}
	buf := make([]byte, blockBytes)
	b.SetBytes(blockBytes)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f, err := tier.Open(tiertest.Key("bench", i%readSet))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := f.ReadAt(buf, 0); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
}

func benchRawRead(b *testing.B, root string) {
	data := tiertest.Payload(1, blockBytes)
	rawPrepare(b, root, readSet)
	for i := 0; i < readSet; i++ {
		rawPut(b, root, i, data)
	}
	buf := make([]byte, blockBytes)
	b.SetBytes(blockBytes)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f, err := os.Open(rawPath(root, i%readSet))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := f.ReadAt(buf, 0); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
}

func benchTierStat(b *testing.B, tier tiers.Tier) {
	for i := 0; i < readSet; i++ {
		tiertest.Put(b, tier, tiertest.Key("bench", i), []byte("x"), tiers.CommitOptions{})
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := tier.Stat(tiertest.Key("bench", i%readSet)); err != nil {
			b.Fatal(err)
		}
	}
}

func benchRawStat(b *testing.B, root string) {
	rawPrepare(b, root, readSet)
	for i := 0; i < readSet; i++ {
		rawPut(b, root, i, []byte("x"))
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := os.Stat(rawPath(root, i%readSet)); err != nil {
			b.Fatal(err)
		}
	}
}

func benchDir(b *testing.B) *tiers.DirTier {
	return newDir(b, tiers.DirConfig{Kind: "nvme", Capacity: 1 << 40})
}

func benchMem(b *testing.B) *tiers.MemTier {
	return newMem(b, tiers.MemConfig{Capacity: 256 << 20})
}

func BenchmarkDirWrite2MiB(b *testing.B) { benchTierWrite(b, benchDir(b)) }
func BenchmarkRawWrite2MiB(b *testing.B) { benchRawWrite(b, b.TempDir()) }
func BenchmarkDirRead2MiB(b *testing.B)  { benchTierRead(b, benchDir(b)) }
func BenchmarkRawRead2MiB(b *testing.B)  { benchRawRead(b, b.TempDir()) }
func BenchmarkDirStat(b *testing.B)      { benchTierStat(b, benchDir(b)) }
func BenchmarkRawStat(b *testing.B)      { benchRawStat(b, b.TempDir()) }
func BenchmarkMemWrite2MiB(b *testing.B) { benchTierWrite(b, benchMem(b)) }
func BenchmarkShmWrite2MiB(b *testing.B) { benchRawWrite(b, shmDir(b)) }
func BenchmarkMemRead2MiB(b *testing.B)  { benchTierRead(b, benchMem(b)) }
func BenchmarkShmRead2MiB(b *testing.B)  { benchRawRead(b, shmDir(b)) }
func BenchmarkMemStat(b *testing.B)      { benchTierStat(b, benchMem(b)) }
func BenchmarkShmStat(b *testing.B)      { benchRawStat(b, shmDir(b)) }
