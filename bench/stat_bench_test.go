package bench

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

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
		lat := newLatencies(b.N)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			p := blockPath(t.root, model, nextID())
			if err := lat.time(func() error { return unix.Stat(p, &st) }); !errors.Is(err, unix.ENOENT) {
				b.Fatalf("stat %s: %v, want ENOENT", p, err)
			}
		}
		reportRate(b, "stats/s")
		lat.report(b)
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
		lat := newLatencies(b.N)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			t0 := time.Now()
			fd, err := unix.Open(paths[i%statSet], unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				b.Fatal(err)
			}
			if err := unix.Close(fd); err != nil {
				b.Fatal(err)
			}
			lat.add(time.Since(t0))
		}
		reportRate(b, "opens/s")
		lat.report(b)
	})
}

// BenchmarkMountGetattr times a GETATTR of a published block whose entry
// the kernel has cached: statx(2) with AT_STATX_FORCE_SYNC, which makes
// a FUSE client ask the server for the attributes whatever their
// timeout (a plain directory answers from its inode).
func BenchmarkMountGetattr(b *testing.B) {
	runTargets(b, func(b *testing.B, t *target) {
		paths := t.set(b, "stat", statSet, smallBlock)
		var stx unix.Statx_t
		statx := func(p string) error {
			return unix.Statx(unix.AT_FDCWD, p, unix.AT_STATX_FORCE_SYNC, unix.STATX_BASIC_STATS, &stx)
		}
		for _, p := range paths {
			if err := statx(p); err != nil || stx.Size != smallBlock {
				b.Fatalf("statx %s: %v (size %d, want %d)", p, err, stx.Size, smallBlock)
			}
		}
		lat := newLatencies(b.N)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			p := paths[i%statSet]
			if err := lat.time(func() error { return statx(p) }); err != nil {
				b.Fatal(err)
			}
		}
		reportRate(b, "getattrs/s")
		lat.report(b)
	})
}

// BenchmarkMountStatHitCold times the first stat(2) of each block after
// the mount started: the kernel has nothing cached, so each stat is a
// LOOKUP. The daemon mounts a tier directory of coldSet blocks and is
// restarted (untimed) before each round and whenever every block has been
// stat'ed once; passthrough_hp (where UCMFS_BENCH_PASSTHROUGH_HP names
// it) serves a copy of the blocks on /dev/shm the same way. The tmpfs
// baseline stats that copy itself (tmpfs has no cold state: its files
// live in the dentry cache).
func BenchmarkMountStatHitCold(b *testing.B) {
	c := coldFixture(b)
	for r := 0; r < rounds(); r++ {
		for _, name := range c.names {
			b.Run(name, func(b *testing.B) {
				srv := c.servers[name]
				root := c.tmpfs
				if srv != nil {
					root = srv.root()
					if err := srv.start(); err != nil {
						b.Fatal(err)
					}
					b.Cleanup(func() {
						if err := srv.stop(); err != nil {
							b.Error(err)
						}
					})
				}
				var st unix.Stat_t
				lat := newLatencies(b.N)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if i > 0 && i%coldSet == 0 && srv != nil {
						b.StopTimer()
						if err := srv.restart(); err != nil {
							b.Fatal(err)
						}
						b.StartTimer()
					}
					p := root + "/" + c.rel[i%coldSet]
					if err := lat.time(func() error { return unix.Stat(p, &st) }); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				reportRate(b, "stats/s")
				lat.report(b)
			})
		}
	}
}

// server is a mount the cold benchmark starts and restarts: a ucmfs
// daemon or the C server.
type server interface {
	root() string
	start() error
	stop() error
	restart() error
}

// coldDaemon is a ucmfs daemon as a server.
type coldDaemon struct{ *daemon }

func (d coldDaemon) root() string { return d.Mnt }
func (d coldDaemon) start() error { _, err := d.daemon.start(); return err }
func (d coldDaemon) stop() error  { _, err := d.daemon.stop(); return err }

func (c *cserver) root() string { return c.mnt }

// cold is the fixture of BenchmarkMountStatHitCold: one tier directory
// of coldSet blocks, the daemons over it (never running at once), a copy
// of the blocks on tmpfs and the C servers over that copy.
type cold struct {
	rel     []string // <model>/<hh>/<id>.bin of each block
	tmpfs   string
	names   []string          // the targets, in the order they run
	servers map[string]server // by name; tmpfs has none
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
	c := &cold{tmpfs: filepath.Join(shmDir, "cold-plain"), servers: map[string]server{}}
	var err error
	if c.rel, err = populate(tier, coldModel, coldBase, coldSet, smallBlock); err != nil {
		return nil, fmt.Errorf("cold set: %w", err)
	}
	if _, err := populate(c.tmpfs, coldModel, coldBase, coldSet, smallBlock); err != nil {
		return nil, fmt.Errorf("cold set on tmpfs: %w", err)
	}
	daemons := []struct {
		name  string
		extra []string
	}{{passthrough, []string{"--fuse-transport", "dev"}}, {fallback, []string{"--no-passthrough", "--fuse-transport", "dev"}}}
	if uringOffered() {
		daemons = append(daemons, struct {
			name  string
			extra []string
		}{uringPT, []string{"--fuse-transport", "uring"}})
	}
	for _, d := range daemons {
		mnt := filepath.Join(diskDir, "cold-"+d.name+"-mnt")
		if err := makeDirs(mnt); err != nil {
			return nil, err
		}
		c.servers[d.name] = coldDaemon{newDaemon(mnt, tier, "64MiB", d.extra...)}
		c.names = append(c.names, d.name)
	}
	c.names = append(c.names, tmpfs)
	for _, t := range cServerTransports() {
		mnt := filepath.Join(diskDir, "cold-"+t.name+"-mnt")
		if err := makeDirs(mnt); err != nil {
			return nil, err
		}
		c.servers[t.name] = newCServer(c.tmpfs, mnt, t.uring)
		c.names = append(c.names, t.name)
	}
	return c, nil
}

// reportRate adds the operations per second to the benchmark's line.
func reportRate(b *testing.B, unit string) {
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(float64(b.N)/s, unit)
	}
}
