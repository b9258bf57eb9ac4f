package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// The targets every benchmark compares, in the order they run; uring only
// where the kernel offers FUSE over io_uring.
const (
	passthrough = "passthrough" // the mount, FUSE passthrough on (the default as root), over /dev/fuse
	fallback    = "fallback"    // the mount with --no-passthrough: the daemon serves the bytes, over /dev/fuse
	tmpfs       = "tmpfs"       // a plain directory on /dev/shm
	nvme        = "nvme"        // a plain directory on the disk of the nvme tiers
	uringPT     = "uring"       // the passthrough mount over FUSE over io_uring (--fuse-transport uring)
	tierTmpfs   = "tmpfs_tier"  // a plain directory on a tmpfs with the memory tier's options (huge pages)
	diskSync    = "disk_sync"   // the nvme directory, each file fdatasync'd: the disk's sustained write
)

// uringOffered reports whether the fuse module lets connections use
// io_uring (an admin's setting; docs/operations.md).
func uringOffered() bool {
	b, err := os.ReadFile("/sys/module/fuse/parameters/enable_uring")
	return err == nil && strings.TrimSpace(string(b)) == "Y"
}

// sharedMemory is the memory tier of the shared daemons: room for every
// block the benchmarks keep (reads, stats) and a write batch.
const (
	sharedMemory      = "2GiB"
	sharedMemoryBytes = 2 << 30
)

// target is where a benchmark does its file operations: a mount point or
// a plain directory in the same <model>/<hh>/<id>.bin layout.
type target struct {
	name string
	root string
	d    *daemon  // nil for a plain directory or the C server
	c    *cserver // the C server (passthrough_hp), or nil
	// sync: each file written is fdatasync'd before its close (the
	// disk's sustained write, only in the write benchmarks).
	sync bool

	mu   sync.Mutex
	sets map[string][]string // see set
}

// mounted reports whether the target is a ucmfs mount.
func (t *target) mounted() bool { return t.d != nil }

// prepare makes model's directories (the mount shows its shards itself).
func (t *target) prepare(tb testing.TB, model string) {
	tb.Helper()
	if err := makeModelDirs(t.root, model, !t.mounted()); err != nil {
		tb.Fatal(err)
	}
}

// shared holds the targets, made once per process: a benchmark function
// runs once per b.N round, and a daemon start costs far more than a round.
var shared struct {
	sync.Mutex
	targets []*target
	err     error
}

// sharedTargets returns the four targets, starting the two daemons (each
// over its own nvme tier, with its own memory tier) on first use.
func sharedTargets(tb testing.TB) []*target {
	tb.Helper()
	requireFUSE(tb)
	shared.Lock()
	defer shared.Unlock()
	if shared.targets == nil && shared.err == nil {
		shared.targets, shared.err = makeTargets()
	}
	if shared.err != nil {
		tb.Fatal(shared.err)
	}
	return shared.targets
}

func makeTargets() ([]*target, error) {
	var ts []*target
	for _, c := range []struct {
		name  string
		extra []string
	}{{passthrough, []string{"--fuse-transport", "dev"}}, {fallback, []string{"--no-passthrough", "--fuse-transport", "dev"}}} {
		mnt, tier := filepath.Join(diskDir, c.name+"-mnt"), filepath.Join(diskDir, c.name+"-tier")
		if err := makeDirs(mnt); err != nil {
			return nil, err
		}
		d := newDaemon(mnt, tier, sharedMemory, c.extra...)
		if _, err := d.start(); err != nil {
			return nil, err
		}
		ts = append(ts, &target{name: c.name, root: mnt, d: d})
	}
	for _, c := range []struct{ name, root string }{
		{tmpfs, filepath.Join(shmDir, "plain")},
		{nvme, filepath.Join(diskDir, "plain")},
	} {
		if err := makeDirs(c.root); err != nil {
			return nil, err
		}
		ts = append(ts, &target{name: c.name, root: c.root})
	}
	if uringOffered() { // last: the benchmarks that pick targets by index keep theirs
		mnt, tier := filepath.Join(diskDir, uringPT+"-mnt"), filepath.Join(diskDir, uringPT+"-tier")
		if err := makeDirs(mnt); err != nil {
			return nil, err
		}
		d := newDaemon(mnt, tier, sharedMemory, "--fuse-transport", "uring")
		if _, err := d.start(); err != nil {
			return nil, err
		}
		ts = append(ts, &target{name: uringPT, root: mnt, d: d})
	}
	more, err := anchorTargets()
	if err != nil {
		return nil, err
	}
	return append(ts, more...), nil
}

// anchorTargets are the baselines beside the mounts: a plain directory on
// a tmpfs with the memory tier's options, passthrough_hp over another
// directory of that tmpfs on each transport (where
// UCMFS_BENCH_PASSTHROUGH_HP names it), and the disk's sustained write.
func anchorTargets() ([]*target, error) {
	if err := tierFS.mount(); err != nil {
		return nil, err
	}
	plain := filepath.Join(tierFS.dir, "plain")
	if err := makeDirs(plain); err != nil {
		return nil, err
	}
	ts := []*target{{name: tierTmpfs, root: plain}}
	for _, c := range cServerTransports() {
		src, mnt := filepath.Join(tierFS.dir, c.name+"-src"), filepath.Join(diskDir, c.name+"-mnt")
		if err := makeDirs(src); err != nil {
			return nil, err
		}
		if err := makeDirs(mnt); err != nil {
			return nil, err
		}
		srv := newCServer(src, mnt, c.uring)
		if err := srv.start(); err != nil {
			return nil, err
		}
		ts = append(ts, &target{name: c.name, root: mnt, c: srv})
	}
	sync := filepath.Join(diskDir, "plain-sync")
	if err := makeDirs(sync); err != nil {
		return nil, err
	}
	return append(ts, &target{name: diskSync, root: sync, sync: true}), nil
}

// tierFS is the tmpfs with the memory tier's options that the anchor
// targets use, mounted on first use under diskDir; TestMain detaches it.
var tierFS tmpfsMount

// tmpfsMount is a tmpfs the benchmarks mount themselves.
type tmpfsMount struct {
	sync.Mutex
	dir     string
	unmount func()
}

// mount mounts the tmpfs at diskDir/tier-tmpfs once.
func (f *tmpfsMount) mount() error {
	f.Lock()
	defer f.Unlock()
	if f.unmount != nil {
		return nil
	}
	dir := filepath.Join(diskDir, "tier-tmpfs")
	u, err := mountTmpfs(dir)
	if err != nil {
		return err
	}
	f.dir, f.unmount = dir, u
	return nil
}

// detach unmounts the tmpfs, if mounted.
func (f *tmpfsMount) detach() {
	f.Lock()
	defer f.Unlock()
	if f.unmount != nil {
		f.unmount()
		f.unmount = nil
	}
}

// runTargets runs fn as one sub-benchmark per target, all targets in
// turn, rounds() times (the repeats are named target#01, #02, ...), so
// that a change of the machine's load during the run reaches every target
// alike. The passthrough target is skipped, with the reason, where the
// kernel refused passthrough.
func runTargets(b *testing.B, fn func(b *testing.B, t *target)) {
	runTargetsOf(b, false, fn)
}

// runTargetsOf is runTargets; with writes set it runs diskSync too (the
// base of the write benchmarks).
func runTargetsOf(b *testing.B, writes bool, fn func(b *testing.B, t *target)) {
	ts := sharedTargets(b)
	for r := 0; r < rounds(); r++ {
		for _, t := range ts {
			if t.sync && !writes {
				continue
			}
			b.Run(t.name, func(b *testing.B) {
				if (t.name == passthrough || t.name == uringPT) && !t.d.passthrough() {
					b.Skipf("the daemon runs without passthrough here:\n%s", t.d.output())
				}
				fn(b, t)
			})
		}
	}
}

// rounds is UCMFS_BENCH_ROUNDS, at least 1: how many times each
// benchmark runs every target (make bench takes the median).
func rounds() int {
	n, err := strconv.Atoi(os.Getenv("UCMFS_BENCH_ROUNDS"))
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// modelFor names the model a benchmark uses on every target.
func modelFor(b *testing.B) string {
	return fmt.Sprintf("bench-%s", sanitize(b.Name()))
}

// set returns the paths of n blocks of size bytes written once per
// process on the target (one set per name), written as an engine writes
// them. On a mount it waits until the daemon's write-back is done, so the
// benchmark that follows runs without it.
func (t *target) set(tb testing.TB, name string, n, size int) []string {
	tb.Helper()
	t.mu.Lock()
	defer t.mu.Unlock()
	if paths, ok := t.sets[name]; ok {
		return paths
	}
	model := "bench-" + name
	t.prepare(tb, model)
	blk := newBlock(size)
	paths := make([]string, n)
	for i := range paths {
		id := nextID()
		paths[i] = blockPath(t.root, model, id)
		if err := writeBlock(paths[i], blk.setID(id)); err != nil {
			tb.Fatal(err)
		}
	}
	if t.mounted() {
		if err := t.d.waitWriteBack(); err != nil {
			tb.Fatal(err)
		}
	}
	if t.sets == nil {
		t.sets = make(map[string][]string)
	}
	t.sets[name] = paths
	return paths
}

// makeDirs creates dir and its parents.
func makeDirs(dir string) error { return os.MkdirAll(dir, 0o755) }

// sanitize turns a benchmark name into a valid model name.
func sanitize(name string) string {
	b := []byte(name)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			b[i] = '-'
		}
	}
	return string(b)
}

// dropBatch removes the files a write benchmark wrote, once its timing is
// over, and returns paths emptied. On a mount the blocks still dirty are
// dropped with their files (nothing waits for their write-back), and the
// next run starts with nothing dirty.
func (t *target) dropBatch(b *testing.B, paths []string) []string {
	for _, p := range paths {
		if err := os.Remove(p); err != nil {
			b.Fatal(err)
		}
	}
	if t.mounted() {
		if err := t.d.waitClean(); err != nil {
			b.Fatal(err)
		}
	}
	return paths[:0]
}
