package bench

import (
	"math/rand/v2"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
)

const (
	// spillMemory is the memory tier of the spill daemon, and spillSet the
	// 2 MiB blocks its benchmark reads: 3× what that memory tier holds.
	spillMemory = "64MiB"
	spillSet    = 3 * 64 << 20 / bigBlock
	// readThreads is how many threads the parallel read benchmark runs.
	readThreads = 4
)

// spill holds the spill run's targets, made once per process: a daemon
// whose memory tier is a third of the working set (passthrough on) over
// /dev/fuse, the two plain directories, and where the kernel offers it the
// same daemon over io_uring.
var spill struct {
	sync.Mutex
	targets []*target
	err     error
}

func spillTargets(tb testing.TB) []*target {
	tb.Helper()
	requireFUSE(tb)
	ts := sharedTargets(tb) // the plain directories
	spill.Lock()
	defer spill.Unlock()
	if spill.targets == nil && spill.err == nil {
		spill.targets = []*target{nil, ts[2], ts[3]}
		transports := []struct{ name, transport string }{{passthrough, "dev"}}
		if uringOffered() {
			transports = append(transports, struct{ name, transport string }{uringPT, "uring"})
		}
		for i, c := range transports {
			mnt, tier := filepath.Join(diskDir, "spill-"+c.name+"-mnt"), filepath.Join(diskDir, "spill-"+c.name+"-tier")
			if spill.err = makeDirs(mnt); spill.err != nil {
				break
			}
			d := newDaemon(mnt, tier, spillMemory, "--fuse-transport", c.transport)
			if _, spill.err = d.start(); spill.err != nil {
				break
			}
			t := &target{name: c.name, root: mnt, d: d}
			if i == 0 {
				spill.targets[0] = t
			} else {
				spill.targets = append(spill.targets, t)
			}
		}
	}
	if spill.err != nil {
		tb.Fatal(spill.err)
	}
	return spill.targets
}

// BenchmarkMountReadSpill2MiB reads 2 MiB blocks (open, read, close) in a
// random order (the same on every target) over a working set 3× the
// memory tier: through the mount most reads find their block on the nvme
// tier only and are served from its file (passthrough), promotions run in
// the background, admitted by TinyLFU. The baselines are the same blocks
// in the plain directories (page cache).
func BenchmarkMountReadSpill2MiB(b *testing.B) {
	ts := spillTargets(b)
	for r := 0; r < rounds(); r++ {
		for _, t := range ts {
			b.Run(t.name, func(b *testing.B) {
				if t.mounted() && !t.d.passthrough() {
					b.Skipf("the daemon runs without passthrough here:\n%s", t.d.output())
				}
				paths := t.set(b, "spill", spillSet, bigBlock)
				buf := make([]byte, bigBlock)
				rng := rand.New(rand.NewPCG(1, 2))
				b.SetBytes(bigBlock)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if err := readBlock(paths[rng.IntN(len(paths))], buf); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkMountRead2MiB4Threads is BenchmarkMountRead2MiB from four
// threads at once (the blocks resident in the memory tier).
func BenchmarkMountRead2MiB4Threads(b *testing.B) {
	runTargets(b, func(b *testing.B, t *target) {
		paths := t.set(b, "read", readSet, bigBlock)
		var next atomic.Int64
		b.SetBytes(bigBlock)
		b.SetParallelism((readThreads + 1) / 2) // GOMAXPROCS (2 here) goroutines each
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			buf := make([]byte, bigBlock)
			for pb.Next() {
				if err := readBlock(paths[next.Add(1)%readSet], buf); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}
