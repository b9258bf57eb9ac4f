package tiertest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ucmfs/ucmfs/tiers"
)

// Benchmarks of a tier beside the raw file operations it wraps, on the
// same directory in the same run, so the ratios show what a tier costs
// (tiers/dir/bench_test.go, tiers/mem/bench_test.go).

const (
	blockBytes = 2 << 20
	writeRing  = 32 // files written before the set is removed (untimed)
	readSet    = 32
)

// benchPuts times put(i) for b.N files, removing each ring of files
// outside the timer to keep disk use bounded.
func benchPuts(b *testing.B, put func(i int), clear func(n int)) {
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
	return filepath.Join(root, Key("bench", i).Path())
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

// BenchWrite times the publish of a 2 MiB block into tier (Put).
func BenchWrite(b *testing.B, tier tiers.Tier) {
	data := Payload(1, blockBytes)
	benchPuts(b, func(i int) {
		Put(b, tier, Key("bench", i), data, tiers.CommitOptions{})
	}, func(n int) {
		for i := 0; i < n; i++ {
			tier.Remove(Key("bench", i))
		}
	})
}

// BenchRawWrite times what BenchWrite does with plain os calls under
// root: a temp file written, closed and renamed.
func BenchRawWrite(b *testing.B, root string) {
	data := Payload(1, blockBytes)
	rawPrepare(b, root, writeRing)
	benchPuts(b, func(i int) { rawPut(b, root, i, data) }, func(n int) {
		for i := 0; i < n; i++ {
			os.Remove(rawPath(root, i))
		}
	})
}

// BenchRead times the open and read of a published 2 MiB block of tier.
func BenchRead(b *testing.B, tier tiers.Tier) {
	data := Payload(1, blockBytes)
	for i := 0; i < readSet; i++ {
		Put(b, tier, Key("bench", i), data, tiers.CommitOptions{})
	}
	buf := make([]byte, blockBytes)
	b.SetBytes(blockBytes)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f, err := tier.Open(Key("bench", i%readSet))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := f.ReadAt(buf, 0); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
}

// BenchRawRead times what BenchRead does with plain os calls under root.
func BenchRawRead(b *testing.B, root string) {
	data := Payload(1, blockBytes)
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

// BenchStat times Stat of a published block of tier.
func BenchStat(b *testing.B, tier tiers.Tier) {
	for i := 0; i < readSet; i++ {
		Put(b, tier, Key("bench", i), []byte("x"), tiers.CommitOptions{})
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := tier.Stat(Key("bench", i%readSet)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchRawStat times what BenchStat does with os.Stat under root.
func BenchRawStat(b *testing.B, root string) {
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
