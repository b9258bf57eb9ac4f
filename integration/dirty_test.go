package integration

import (
	"os"
	"testing"
	"time"
)

// TestDirtyExpiry: through the real daemon, blocks published below the
// dirty background threshold stay in memory only (dirty, absent from the
// nvme tier) until --dirty-expire, then reach the tier with no flush.
// Blocks made durable by .ucm/flush survive kill -9 and read back after a
// remount, while their expiry is far away.
func TestDirtyExpiry(t *testing.T) {
	const expire = 3 * time.Second
	d := mountUCM(t, mountOpts{Args: []string{"--dirty-expire", expire.String(), "--dirty-background", "16MiB"}})
	if err := os.Mkdir(d.path("m"), 0o755); err != nil {
		t.Fatal(err)
	}
	ids := testIDs("dirty-expiry", 8)
	start := time.Now()
	mustPy(t, append([]string{"put", d.Mnt, "m", "--seed", "3"}, ids...)...)
	if on := listBlocks(t, d.Tier, "m"); len(on) != 0 {
		t.Fatalf("%d blocks on the nvme tier at once, want none before the expiry", len(on))
	}
	if st := statsOf(t, d); st["dirty_files"] != float64(len(ids)) || st["dirty_bytes"].(float64) <= 0 {
		t.Fatalf("stats: dirty_files %v, dirty_bytes %v; want %d files", st["dirty_files"], st["dirty_bytes"], len(ids))
	}
	waitUntil(t, "blocks on the nvme tier after the expiry", func() bool { return len(listBlocks(t, d.Tier, "m")) == len(ids) })
	if took := time.Since(start); took < expire {
		t.Fatalf("written back after %v, before the expiry %v", took, expire)
	}
	waitUntil(t, "nothing dirty", func() bool { return statsOf(t, d)["dirty_files"] == float64(0) })
	mustPy(t, append([]string{"verify", d.Tier, "m", "--seed", "3"}, ids...)...)
	if code := d.stop(); code != 0 {
		t.Fatalf("SIGTERM: exit %d\n%s", code, d.out.String())
	}

	// An hour's expiry: only the flush puts these blocks on the tier.
	d2 := mountUCM(t, mountOpts{Mnt: d.Mnt, Tier: d.Tier, Args: []string{"--dirty-expire", "1h"}})
	flushed := testIDs("dirty-flushed", 8)
	mustPy(t, append([]string{"put", d2.Mnt, "m", "--seed", "4"}, flushed...)...)
	if st := statsOf(t, d2); st["dirty_files"] != float64(len(flushed)) {
		t.Fatalf("dirty_files %v before the flush, want %d", st["dirty_files"], len(flushed))
	}
	flushAll(t, d2)
	d2.kill()
	d2.detach()
	d3 := mountUCM(t, mountOpts{Mnt: d.Mnt, Tier: d.Tier})
	mustPy(t, append([]string{"verify", d3.Mnt, "m", "--seed", "4"}, flushed...)...)
	mustPy(t, append([]string{"verify", d3.Mnt, "m", "--seed", "3"}, ids...)...)
}
