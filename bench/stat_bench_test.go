package bench

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

const (
	// statSet is how many published blocks the warm stat benchmark cycles
	// through.
	statSet = 4096
	// coldSet is how many blocks the cold stat benchmark's tier holds: the
	// daemon restarts each time they have all been stat'ed once.
	coldSet = 16384
	// coldModel is the model of the cold set.
	coldModel = "bench-cold"
	// coldBase is where the cold set's ids start (see idAt), far from
	// nextID's.
	coldBase = 1 << 40
)

// BenchmarkMountStatHit times stat(2) of published blocks the kernel has
// cached (each was stat'ed once before the timing): the mount's entries
// and attributes are cached for --entry-ttl (1h), so the daemon is not
// asked.
func BenchmarkMountStatHit(b *testing.B) {
	runTargets(b, func(b *testing.B, t *target) {
		paths := t.set(b, "stat", statSet, smallBlock)
		var st unix.Stat_t
		for _, p := range paths {
			if err := unix.Stat(p, &st); err != nil || st.Size != smallBlock {
				b.Fatalf("stat %s: %v (size %d, want %d)", p, err, st.Size, smallBlock)
			}
		}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if err := unix.Stat(paths[i%statSet], &st); err != nil {
				b.Fatal(err)
			}
		}
		reportRate(b, "stats/s")
	})
}

// BenchmarkMountStatMiss times stat(2) of block ids that do not exist,
// each id a new one, so the kernel's negative cache never answers: through
// the mount every stat is a LOOKUP the daemon answers. (Repeating one id
// within --negative-ttl would be answered by the kernel alone.)
func BenchmarkMountStatMiss(b *testing.B) {
	runTargets(b, func(b *testing.B, t *target) {
		model := modelFor(b)
		t.prepare(b, model)
		var st unix.Stat_t
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			p := blockPath(t.root, model, nextID())
			if err := unix.Stat(p, &st); !errors.Is(err, unix.ENOENT) {
				b.Fatalf("stat %s: %v, want ENOENT", p, err)
			}
		}
		reportRate(b, "stats/s")
	})
}

// BenchmarkMountOpenClose times open(2) and close(2) of published blocks
// whose entries the kernel has cached (each was opened once before the
// timing): through the mount each is an OPEN, a FLUSH and a RELEASE the
// daemon answers, the round trips a load pays beyond its data.
func BenchmarkMountOpenClose(b *testing.B) {
	runTargets(b, func(b *testing.B, t *target) {
		paths := t.set(b, "stat", statSet, smallBlock)
		for _, p := range paths {
			fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				b.Fatalf("open %s: %v", p, err)
			}
			unix.Close(fd)
		}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			fd, err := unix.Open(paths[i%statSet], unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				b.Fatal(err)
			}
			if err := unix.Close(fd); err != nil {
				b.Fatal(err)
			}
		}
		reportRate(b, "opens/s")
	})
}

// BenchmarkMountStatHitCold times the first stat(2) of each block after
// the mount started: the kernel has nothing cached, so each stat is a
// LOOKUP. The daemon mounts a tier directory of coldSet blocks and is
// restarted (untimed) before each round and whenever every block has been
// stat'ed once. The tmpfs baseline stats the same files in a copy on
// /dev/shm (tmpfs has no cold state: its files live in the dentry cache).
func BenchmarkMountStatHitCold(b *testing.B) {
	c := coldFixture(b)
	for i := 0; i < rounds()*3; i++ {
		name := []string{passthrough, fallback, tmpfs}[i%3]
		b.Run(name, func(b *testing.B) {
			root, d := c.tmpfs, c.daemons[name]
			if d != nil {
				root = d.Mnt
				if _, err := d.start(); err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() {
					if _, err := d.stop(); err != nil {
						b.Error(err)
					}
				})
			}
			var st unix.Stat_t
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if i > 0 && i%coldSet == 0 && d != nil {
					b.StopTimer()
					if err := d.restart(); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				p := root + "/" + c.rel[i%coldSet]
				if err := unix.Stat(p, &st); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			reportRate(b, "stats/s")
		})
	}
}

// cold is the fixture of BenchmarkMountStatHitCold: one tier directory
// of coldSet blocks, two daemons over it (never running at once), and a
// copy of the blocks on tmpfs.
type cold struct {
	rel     []string // <model>/<hh>/<id>.bin of each block
	tmpfs   string
	daemons map[string]*daemon
}

var coldOnce struct {
	sync.Mutex
	c   *cold
	err error
}

// coldFixture makes the cold fixture once per process.
func coldFixture(tb testing.TB) *cold {
	tb.Helper()
	requireFUSE(tb)
	coldOnce.Lock()
	defer coldOnce.Unlock()
	if coldOnce.c == nil && coldOnce.err == nil {
		coldOnce.c, coldOnce.err = makeCold()
	}
	if coldOnce.err != nil {
		tb.Fatal(coldOnce.err)
	}
	return coldOnce.c
}

func makeCold() (*cold, error) {
	tier := filepath.Join(diskDir, "cold-tier")
	c := &cold{tmpfs: filepath.Join(shmDir, "cold-plain"), daemons: map[string]*daemon{}}
	var err error
	if c.rel, err = populate(tier, coldModel, coldBase, coldSet, smallBlock); err != nil {
		return nil, fmt.Errorf("cold set: %w", err)
	}
	if _, err := populate(c.tmpfs, coldModel, coldBase, coldSet, smallBlock); err != nil {
		return nil, fmt.Errorf("cold set on tmpfs: %w", err)
	}
	for name, extra := range map[string][]string{passthrough: nil, fallback: {"--no-passthrough"}} {
		mnt := filepath.Join(diskDir, "cold-"+name+"-mnt")
		if err := makeDirs(mnt); err != nil {
			return nil, err
		}
		c.daemons[name] = newDaemon(mnt, tier, "64MiB", extra...)
	}
	return c, nil
}

// reportRate adds the operations per second to the benchmark's line.
func reportRate(b *testing.B, unit string) {
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(float64(b.N)/s, unit)
	}
}
