package integration

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// One tier, many hosts: daemons of the real binary over one nfs tier
// directory (a local directory here, or internal/faultfs over it giving
// NFS-like latency, ESTALE and EIO; shared_fault_test.go).

// sharedTTL is the daemons' negative TTL: the bound on how long any of
// them may be wrong about what another published or removed.
const sharedTTL = 200 * time.Millisecond

// sharedDaemon mounts a daemon whose only directory tier is the shared
// directory dir (kind nfs).
func sharedDaemon(t testing.TB, dir string) *daemon {
	t.Helper()
	return mountUCM(t, sharedMount("nfs:"+dir))
}

// sharedMount is the mount of a daemon over the tier spec tier, with
// extra flags args.
func sharedMount(tier string, args ...string) mountOpts {
	return mountOpts{Bare: true, Args: append([]string{
		"--memory", "64MiB", "--memory-dir", memDir, "--log-level", "warn",
		"--tier", tier, "--negative-ttl", sharedTTL.String()}, args...)}
}

// sharedDir makes the shared tier directory of a test.
func sharedDir(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(testDir(t), "share")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// putBlocks writes ids into model through d's mount (making the model)
// and flushes them to the shared tier.
func putBlocks(t *testing.T, d *daemon, model string, ids []string) {
	t.Helper()
	writeBlocks(t, d, model, ids)
	flushAll(t, d)
}

// writeBlocks writes ids into model through d's mount (making the
// model); the daemon writes them back to the shared tier when it will.
func writeBlocks(t *testing.T, d *daemon, model string, ids []string) {
	t.Helper()
	if err := os.Mkdir(d.path(model), 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		t.Fatal(err)
	}
	for _, id := range ids {
		if err := writeVerdict(blockPath(d.Mnt, model, id), goodBlock(id)); err != nil {
			t.Fatalf("write %s through %s: %v", id, d.Mnt, err)
		}
	}
}

// listed reports whether the directory dir lists name.
func listed(dir, name string) bool {
	ents, _ := os.ReadDir(dir)
	return slices.ContainsFunc(ents, func(e os.DirEntry) bool { return e.Name() == name })
}

// plantBlocks writes ids straight into the shared directory, as UCM or
// another host's copy would.
func plantBlocks(t *testing.T, dir, model string, ids []string) {
	t.Helper()
	makeShards(t, dir, model, ids)
	for _, id := range ids {
		if err := os.WriteFile(blockPath(dir, model, id), goodBlock(id), 0o444); err != nil {
			t.Fatal(err)
		}
	}
}

// present counts the ids of model that stat as present through d.
func present(d *daemon, model string, ids []string) int {
	n := 0
	for _, id := range ids {
		if _, err := os.Stat(blockPath(d.Mnt, model, id)); err == nil {
			n++
		}
	}
	return n
}

// until polls cond and returns how long it took to hold (failing the
// test after a minute).
func until(t *testing.T, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	waitUntil(t, what, cond)
	return time.Since(start)
}

// readsExact checks every id of model reads back exact through d.
func readsExact(t *testing.T, d *daemon, model string, ids []string) {
	t.Helper()
	for _, id := range ids {
		got, err := os.ReadFile(blockPath(d.Mnt, model, id))
		if err != nil || !bytes.Equal(got, goodBlock(id)) {
			t.Fatalf("read %s/%s through %s: %v (%d bytes)", model, id, d.Mnt, err, len(got))
		}
	}
}

// lookupAll asks d's .ucm/lookup about ids of model: the bitmap.
func lookupAll(t *testing.T, d *daemon, model string, ids []string) string {
	t.Helper()
	a := controlRequest(t, d, "lookup", "exists "+model+" "+strings.Join(ids, " "))
	f := strings.Fields(a)
	if len(f) != 3 || f[0] != "ok" {
		t.Fatalf("lookup: %q", a)
	}
	return f[2]
}

// TestSharedDiscovery: a model made on B, blocks written through B, and
// a model put straight into the shared directory, appear on A and C
// within the TTL, with no step on A or C: lookup, listing, .ucm/lookup,
// reads.
func TestSharedDiscovery(t *testing.T) {
	dir := sharedDir(t)
	a, b, c := sharedDaemon(t, dir), sharedDaemon(t, dir), sharedDaemon(t, dir)
	ids := testIDs("discovery", 20)
	// A looks before B has it: a miss, cached by A's kernel for the TTL.
	if _, err := os.Stat(a.path("model-b")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("model-b on A before B made it: %v", err)
	}
	// An empty model made on B.
	if err := os.Mkdir(b.path("model-b"), 0o755); err != nil {
		t.Fatal(err)
	}
	took := until(t, "A and C see the model B made", func() bool {
		return listed(a.Mnt, "model-b") && listed(c.Mnt, "model-b")
	})
	t.Logf("cross-host visibility: a model made on B listed on A and C after %v (negative TTL %v)", took.Round(time.Millisecond), sharedTTL)
	// Blocks written through B, no flush: B's write-back puts them on
	// the share, the others find them there.
	writeBlocks(t, b, "model-b", ids)
	took = until(t, "A and C see B's 20 blocks", func() bool {
		return present(a, "model-b", ids) == len(ids) && present(c, "model-b", ids) == len(ids)
	})
	t.Logf("cross-host visibility: blocks written on B (write-back, no flush) seen on A and C after %v (negative TTL %v)", took.Round(time.Millisecond), sharedTTL)
	for _, d := range []*daemon{a, c} {
		if !listed(d.Mnt, "model-b") {
			t.Errorf("%s does not list model-b", d.Mnt)
		}
		if bm := lookupAll(t, d, "model-b", ids); bm != strings.Repeat("1", len(ids)) {
			t.Errorf(".ucm/lookup on %s: %s", d.Mnt, bm)
		}
		readsExact(t, d, "model-b", ids)
	}

	// Blocks another host (or UCM itself) puts straight into the shared
	// directory, under a model no daemon made.
	planted := testIDs("planted", 20)
	plantBlocks(t, dir, "model-ucm", planted)
	took = until(t, "A, B and C see the 20 planted blocks", func() bool {
		return present(a, "model-ucm", planted)+present(b, "model-ucm", planted)+present(c, "model-ucm", planted) == 3*len(planted)
	})
	t.Logf("blocks put into the shared directory seen on every host after %v", took.Round(time.Millisecond))
	until(t, "B lists model-ucm and its shard", func() bool {
		return listed(b.Mnt, "model-ucm") && listed(filepath.Join(b.Mnt, "model-ucm", planted[0][:2]), planted[0]+".bin")
	})
	readsExact(t, c, "model-ucm", planted)
}

// TestSharedCoherentDeletes: 60 blocks written on A, read on B and C; A
// unlinks 40: B and C stop showing them within the TTL (stat, listing,
// .ucm/lookup), and the other 20 still read exact.
func TestSharedCoherentDeletes(t *testing.T) {
	dir := sharedDir(t)
	a, b, c := sharedDaemon(t, dir), sharedDaemon(t, dir), sharedDaemon(t, dir)
	ids := testIDs("deletes", 60)
	putBlocks(t, a, "m", ids)
	for _, d := range []*daemon{b, c} {
		until(t, "the blocks seen", func() bool { return present(d, "m", ids) == len(ids) })
		readsExact(t, d, "m", ids) // in their indexes and memory tiers now
	}
	gone, kept := ids[:40], ids[40:]
	for _, id := range gone {
		if err := os.Remove(blockPath(a.Mnt, "m", id)); err != nil {
			t.Fatal(err)
		}
	}
	took := until(t, "B and C stop showing the 40 removed blocks", func() bool {
		return present(b, "m", gone)+present(c, "m", gone) == 0
	})
	t.Logf("a remote delete is seen on B and C after %v (negative TTL %v)", took.Round(time.Millisecond), sharedTTL)
	for _, d := range []*daemon{b, c} {
		if bm := lookupAll(t, d, "m", gone); bm != strings.Repeat("0", len(gone)) {
			t.Errorf(".ucm/lookup on %s of the removed blocks: %s", d.Mnt, bm)
		}
		for _, id := range gone[:5] {
			if _, err := os.ReadFile(blockPath(d.Mnt, "m", id)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("open of a removed block on %s: %v", d.Mnt, err)
			}
		}
		readsExact(t, d, "m", kept)
	}
}

// TestSharedEvictionAgreed: A restarts with a size far below what the
// shared directory holds, above what B uses. It evicts the blocks nobody
// used for an hour (oldest mtime first) and none of those B uses now; B
// stops showing the evicted ones within the TTL.
func TestSharedEvictionAgreed(t *testing.T) {
	dir := sharedDir(t)
	cold, hot := testIDs("cold", 40), testIDs("hot", 20)
	plantBlocks(t, dir, "m", append(slices.Clone(cold), hot...))
	old := time.Now().Add(-time.Hour)
	for _, id := range cold {
		os.Chtimes(blockPath(dir, "m", id), old, old)
	}
	for _, id := range hot { // used an hour ago too, and now by B
		os.Chtimes(blockPath(dir, "m", id), old, old)
	}
	b := sharedDaemon(t, dir)
	readsExact(t, b, "m", hot) // B's use moves their mtime in the directory
	// Room for 25 blocks as the tier charges them (a block of 1 KiB takes
	// one 4 KiB block of the filesystem): the 20 hot ones fit, so that
	// none has to go (a share over its size would take recent blocks too:
	// tiers/dir/shared_size.go).
	size := int64(4096) * 25
	mountUCM(t, sharedMount("nfs:"+dir+":"+strconv.FormatInt(size, 10)))
	took := until(t, "A evicts the cold blocks", func() bool {
		n := 0
		for _, id := range cold {
			if _, err := os.Stat(blockPath(dir, "m", id)); err == nil {
				n++
			}
		}
		return n == 0
	})
	t.Logf("A evicted 40 cold blocks in %v", took.Round(time.Millisecond))
	for _, id := range hot {
		if _, err := os.Stat(blockPath(dir, "m", id)); err != nil {
			t.Errorf("a block B uses was evicted: %v", err)
		}
	}
	until(t, "B stops showing the evicted blocks", func() bool { return present(b, "m", cold) == 0 })
	readsExact(t, b, "m", hot)
}
