package fs

import (
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/ucmfs/ucmfs/format"
	"golang.org/x/sys/unix"
)

// In-process benchmarks of the FUSE layer: the mount and its client share
// this process, so `go test -bench . -cpuprofile cpu.prof ./fs` profiles
// the daemon's side of every request. Each runs on a mount with
// passthrough, on one whose daemon serves the bytes ("daemon"), and, as
// the baseline of the same run, on a plain directory on /dev/shm
// ("tmpfs"). The numbers of record, with the real binary in its own
// process, come from package bench.

// benchTarget is where a benchmark runs: a mount or the baseline
// directory, both in the <model>/<hh>/<id>.bin layout.
type benchTarget struct {
	root string
	m    *testMount // nil for the baseline
}

// path is key's path on the target.
func (t benchTarget) path(k format.Key) string { return filepath.Join(t.root, k.Path()) }

// store publishes data as key: through the stack on a mount, as a plain
// file in the baseline directory (with all 256 shard directories).
func (t benchTarget) store(b *testing.B, k format.Key, data []byte) {
	b.Helper()
	if t.m != nil {
		put(b, t.m.st, k, data)
		return
	}
	for i := 0; i < 256; i++ { // every shard, as the mount shows them
		if err := os.MkdirAll(filepath.Join(t.root, k.Model, format.ShardName(byte(i))), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	if err := os.WriteFile(t.path(k), data, 0o444); err != nil {
		b.Fatal(err)
	}
}

// benchTargets runs fn on a passthrough mount, a daemon-served mount and
// a tmpfs directory, one sub-benchmark each.
func benchTargets(b *testing.B, fn func(b *testing.B, t benchTarget)) {
	for _, name := range []string{"passthrough", "daemon", "tmpfs"} {
		b.Run(name, func(b *testing.B) {
			if name == "tmpfs" {
				fn(b, tmpfsTarget(b))
				return
			}
			m := newMount(b, Options{Passthrough: name == "passthrough"})
			if name == "passthrough" && !m.srv.PassthroughActive() {
				b.Skip("passthrough unavailable here")
			}
			fn(b, benchTarget{root: m.mnt, m: m})
		})
	}
}

// tmpfsTarget is the baseline: a directory on /dev/shm, removed when
// the benchmark ends.
func tmpfsTarget(b *testing.B) benchTarget {
	dir, err := os.MkdirTemp("/dev/shm", "ucmfs-fs-bench-")
	if err != nil {
		b.Skipf("no tmpfs baseline: %v", err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	return benchTarget{root: dir}
}

// BenchmarkRead2MiB opens, reads (1 MiB at a time) and closes one 2 MiB
// block.
func BenchmarkRead2MiB(b *testing.B) {
	benchTargets(b, func(b *testing.B, t benchTarget) {
		k, d := testBlock(testModel, 1, 2<<20-64)
		t.store(b, k, d)
		buf := make([]byte, 1<<20)
		b.SetBytes(int64(len(d)))
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			f, err := os.Open(t.path(k))
			if err != nil {
				b.Fatal(err)
			}
			if _, err := io.CopyBuffer(io.Discard, onlyReader{f}, buf); err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
	})
}

// BenchmarkWrite2MiB writes, publishes and (untimed) unlinks one 2 MiB
// block.
func BenchmarkWrite2MiB(b *testing.B) {
	benchTargets(b, func(b *testing.B, t benchTarget) {
		k, d := testBlock(testModel, 1, 2<<20-64)
		if err := os.MkdirAll(filepath.Dir(t.path(k)), 0o755); err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(len(d)))
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if err := writeFile(t.path(k), d); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			if err := os.Remove(t.path(k)); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
	})
}

// BenchmarkStatCached stats a published block the kernel has cached.
func BenchmarkStatCached(b *testing.B) {
	benchTargets(b, func(b *testing.B, t benchTarget) {
		k, d := testBlock(testModel, 1, 64)
		t.store(b, k, d)
		var st unix.Stat_t
		p := t.path(k)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if err := unix.Stat(p, &st); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkStatMiss stats ids that do not exist, a new one each time, so
// on the mount every stat is a LOOKUP the daemon answers.
func BenchmarkStatMiss(b *testing.B) {
	benchTargets(b, func(b *testing.B, t benchTarget) {
		k, d := testBlock(testModel, 1, 64)
		t.store(b, k, d) // the model and its shards exist
		salt := rand.Uint64()
		var st unix.Stat_t
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			var id format.ID
			binary.LittleEndian.PutUint64(id[:8], uint64(i))
			binary.LittleEndian.PutUint64(id[8:], salt)
			p := t.path(format.Key{Model: testModel, ID: id})
			if err := unix.Stat(p, &st); !errors.Is(err, unix.ENOENT) {
				b.Fatalf("stat %s: %v, want ENOENT", p, err)
			}
		}
	})
}

// onlyReader hides WriteTo so the copy uses the 1 MiB buffer.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }
