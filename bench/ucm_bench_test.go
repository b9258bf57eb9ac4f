package bench

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/ucmfs/ucmfs/internal/ucmproto"
)

// The UCM PosixStore benchmarks replay UCM's protocol (internal/ucmproto)
// with 2 MiB blocks written and read by 4 threads (one shard of 512 KiB
// each, in 128 KiB tensors), shard width 3, in psync and O_DIRECT modes:
// on a ucm-posix model of each mount (passthrough, fallback) and on a
// plain directory of the disk of the nvme tiers (nvme), the targets in
// turn in every round. docs/performance.md gives the ratios of medians.

// ucmModes are the modes the UCM benchmarks run in.
var ucmModes = []ucmproto.Mode{ucmproto.Psync, ucmproto.Direct}

// ucmStores holds, per target and mode, a store set up once per process.
var ucmStores struct {
	sync.Mutex
	m map[string]*ucmproto.Store
}

// ucmStore returns the UCM store of mode on target t: a model directory
// with the ucm-posix layout on a mount, a plain directory otherwise,
// with its shard directories made.
func ucmStore(b *testing.B, t *target, mode ucmproto.Mode) *ucmproto.Store {
	b.Helper()
	ucmStores.Lock()
	defer ucmStores.Unlock()
	key := t.name + "/" + mode.String()
	if st, ok := ucmStores.m[key]; ok {
		return st
	}
	root := filepath.Join(t.root, "bench-ucm-"+mode.String())
	if err := os.MkdirAll(root, 0o755); err != nil {
		b.Fatal(err)
	}
	if t.mounted() {
		if err := unix.Setxattr(root, "user.ucm.layout", []byte("ucm-posix"), 0); err != nil {
			b.Fatal(err)
		}
	}
	st := &ucmproto.Store{Root: root, Width: 3, Mode: mode, Shards: 4, ShardSize: bigBlock / 4, TensorSize: bigBlock / 16}
	if err := st.Setup(); err != nil {
		b.Fatal(err)
	}
	if ucmStores.m == nil {
		ucmStores.m = make(map[string]*ucmproto.Store)
	}
	ucmStores.m[key] = st
	return st
}

// runUCM runs fn per mode and per target (tmpfs and the disk's
// sustained write left out), rounds() times.
func runUCM(b *testing.B, fn func(b *testing.B, t *target, st *ucmproto.Store)) {
	ts := sharedTargets(b)
	for _, mode := range ucmModes {
		b.Run(mode.String(), func(b *testing.B) {
			for r := 0; r < rounds(); r++ {
				for _, t := range ts {
					if t.name == tmpfs || t.sync {
						continue
					}
					b.Run(t.name, func(b *testing.B) {
						if t.name == passthrough && !t.d.passthrough() {
							b.Skipf("the daemon runs without passthrough here:\n%s", t.d.output())
						}
						fn(b, t, ucmStore(b, t, mode))
					})
				}
			}
		})
	}
}

// BenchmarkUCMDump2MiB times UCM's dump of one block: 4 threads open
// <id>.tmp (O_WRONLY|O_CREAT, and O_DIRECT in that mode), each writes its
// shard's 4 tensors, the last renames <id>.tmp to <id>, all close.
// Write-back runs during the timing as in service (no pause lets it catch
// up); the blocks are removed once the timing is over.
func BenchmarkUCMDump2MiB(b *testing.B) {
	runUCM(b, func(b *testing.B, t *target, st *ucmproto.Store) {
		data := newBlock(bigBlock).buf
		var written []string
		b.SetBytes(bigBlock)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			id := nextID().String()
			if err := st.Dump(id, data, false); err != nil {
				b.Fatal(err)
			}
			written = append(written, st.Path(id, false))
		}
		b.StopTimer()
		t.dropBatch(b, written)
	})
}

// BenchmarkUCMLoad2MiB times UCM's load of one block: 4 threads open
// <id> (O_RDONLY, and O_DIRECT in that mode) and read their shard's 4
// tensors, over a set of 32 blocks dumped once (and, on a mount, written
// back to the nvme tier) before the timing starts.
func BenchmarkUCMLoad2MiB(b *testing.B) {
	runUCM(b, func(b *testing.B, t *target, st *ucmproto.Store) {
		ids := ucmLoadSet(b, t, st)
		out := make([]byte, bigBlock)
		hits := memShare(b, t)
		b.SetBytes(bigBlock)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if err := st.LoadInto(ids[i%len(ids)], out); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		hits()
	})
}

// memShare reads a mount's counts of opens served from memory and from
// a lower tier; the function it returns reports the share served from
// memory since (mem-%): a load at the disk's speed is a load the memory
// tier did not hold. Plain directories report nothing.
func memShare(b *testing.B, t *target) func() {
	if !t.mounted() {
		return func() {}
	}
	before, err := t.d.stats()
	if err != nil {
		b.Fatal(err)
	}
	return func() {
		after, err := t.d.stats()
		if err != nil {
			b.Fatal(err)
		}
		mem, lower := after.MemHits-before.MemHits, after.LowerHits-before.LowerHits
		if mem+lower > 0 {
			b.ReportMetric(100*float64(mem)/float64(mem+lower), "mem-%")
		}
	}
}

// ucmLoadSets holds the ids each store's load benchmark reads.
var ucmLoadSets sync.Map // *ucmproto.Store -> []string

// ucmLoadSet dumps readSet blocks into st once per process.
func ucmLoadSet(b *testing.B, t *target, st *ucmproto.Store) []string {
	b.Helper()
	if ids, ok := ucmLoadSets.Load(st); ok {
		return ids.([]string)
	}
	data := newBlock(bigBlock).buf
	ids := make([]string, readSet)
	for i := range ids {
		ids[i] = nextID().String()
		if err := st.Dump(ids[i], data, false); err != nil {
			b.Fatal(err)
		}
	}
	if t.mounted() {
		if err := t.d.waitWriteBack(); err != nil {
			b.Fatal(err)
		}
	}
	ucmLoadSets.Store(st, ids)
	return ids
}
