package tiers

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/tiers/dir"
	"github.com/ucmfs/ucmfs/tiers/tier"
)

// sharedStack builds a stack of a memory tier of memCap bytes over one
// nfs tier in dir, revalidated every ttl: one "host" of a shared tier.
func sharedStack(t testing.TB, memCap int64, dir string, ttl time.Duration, dc DirConfig) *Stack {
	t.Helper()
	dc.Kind, dc.Dir, dc.Revalidate, dc.Logger = "nfs", dir, ttl, testLogger()
	return buildStack(t, StackConfig{}, MemConfig{Capacity: memCap}, dc)
}

// eventually polls cond every 10ms for up to d.
func eventually(d time.Duration, cond func() bool) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

const testTTL = 100 * time.Millisecond

// plantFiles writes n blocks of model "m" with payloads of size bytes
// straight into the directory dir, as another host would.
func plantFiles(dir string, n, size int) []format.Key {
	keys := make([]format.Key, n)
	for i := range keys {
		k, data := testBlock("m", i, size)
		p := filepath.Join(dir, k.Path())
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, data, 0o444)
		keys[i] = k
	}
	return keys
}

func TestSharedDiscovery(t *testing.T) {
	dir := t.TempDir()
	a := sharedStack(t, 1<<20, dir, testTTL, DirConfig{})
	b := sharedStack(t, 1<<20, dir, testTTL, DirConfig{})
	k, data := testBlock("model-a", 1, 4096)
	if _, err := a.Put(k, data, true); err != nil {
		t.Fatal(err)
	}
	// Within the TTL: B's background scan may have listed the shard
	// while A was writing.
	if !eventually(2*testTTL, func() bool { return b.HasBlock(k.Model, k.ID) && b.HasModel(k.Model) }) {
		t.Fatal("B does not see the block or model A published")
	}
	mustEqual(t, "B's read", readAll(t, b, k), data)
	// A block put straight into the directory under a new model (UCM
	// itself, or a copy by hand) is seen through every path.
	k2, data2 := testBlock("model-new", 2, 4096)
	p := filepath.Join(dir, k2.Path())
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, data2, 0o444); err != nil {
		t.Fatal(err)
	}
	if !eventually(2*testTTL, func() bool {
		m := b.Models()
		return len(m) == 2 && m[1] == "model-new"
	}) {
		t.Fatalf("B's models: %v", b.Models())
	}
	if keys := b.ShardKeys(k2.Model, k2.ID[0]); len(keys) != 1 || keys[0] != k2 {
		t.Fatalf("B's shard listing: %v", keys)
	}
	if _, err := b.Stat(k2); err != nil {
		t.Fatal(err)
	}
	mustEqual(t, "B's read of a file put by hand", readAll(t, b, k2), data2)
}

func TestSharedRemoteRemoveSeenWithinTTL(t *testing.T) {
	dir := t.TempDir()
	a := sharedStack(t, 1<<20, dir, testTTL, DirConfig{})
	b := sharedStack(t, 1<<20, dir, testTTL, DirConfig{})
	k, data := testBlock("m", 1, 4096)
	if _, err := a.Put(k, data, true); err != nil {
		t.Fatal(err)
	}
	mustEqual(t, "B's read", readAll(t, b, k), data) // now in B's index and memory
	h, err := b.Open(k)
	if err != nil {
		t.Fatal(err)
	}
	defer h.File.Close()
	if err := a.Remove(k); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if !eventually(10*testTTL, func() bool { return !b.HasBlock(k.Model, k.ID) }) {
		t.Fatal("B still shows a block A removed")
	}
	t.Logf("B stopped showing the removed block after %v (TTL %v)", time.Since(start).Round(time.Millisecond), testTTL)
	if _, err := b.Stat(k); !errors.Is(err, ErrNotFound) {
		t.Fatalf("B's Stat: %v", err)
	}
	if len(b.ShardKeys(k.Model, k.ID[0])) != 0 {
		t.Fatal("B lists the removed block")
	}
	// The read opened before the remove still reads every byte.
	got, err := io.ReadAll(h.File)
	if err != nil {
		t.Fatal(err)
	}
	mustEqual(t, "B's read across A's remove", got, data)
}

func TestSharedPrivateCopyWithoutRoom(t *testing.T) {
	dir := t.TempDir()
	a := sharedStack(t, 1<<20, dir, testTTL, DirConfig{})
	b := sharedStack(t, 8<<10, dir, testTTL, DirConfig{}) // no room for the block
	k, data := testBlock("m", 1, 64<<10)
	if _, err := a.Put(k, data, true); err != nil {
		t.Fatal(err)
	}
	h, err := b.Open(k)
	if err != nil {
		t.Fatal(err)
	}
	defer h.File.Close()
	if h.TierID != 1 {
		t.Fatalf("served from tier %d", h.TierID)
	}
	os.Remove(filepath.Join(dir, k.Path()))
	got, err := io.ReadAll(h.File)
	if err != nil {
		t.Fatal(err)
	}
	mustEqual(t, "the private copy", got, data)
}

func TestSharedEvictsOldestMTimeOnly(t *testing.T) {
	dir := t.TempDir()
	old := time.Now().Add(-time.Hour)
	keys := plantFiles(dir, 20, 4096)
	for i, k := range keys {
		if i%2 == 0 { // the even ones were used by nobody for an hour
			os.Chtimes(filepath.Join(dir, k.Path()), old, old)
		}
	}
	// Room for fewer than 20 but more than the 10 recent ones (a file
	// of 4 KiB and a header takes two 4 KiB blocks): the odd ones are
	// recent and must stay, the share being within its size without them.
	s := sharedStack(t, 1<<20, dir, testTTL, DirConfig{Capacity: 12 * 8192})
	if !eventually(10*time.Second, func() bool {
		_, err := os.Stat(filepath.Join(dir, keys[0].Path()))
		return errors.Is(err, os.ErrNotExist)
	}) {
		t.Fatal("nothing evicted")
	}
	time.Sleep(1500 * time.Millisecond)
	for i, k := range keys {
		_, err := os.Stat(filepath.Join(dir, k.Path()))
		if i%2 == 1 && err != nil {
			t.Errorf("recent block %d evicted: %v", i, err)
		}
	}
	_ = s
}

// TestSharedRecentYieldOverSize: a share over its size holding only
// files younger than KeepRecent (other hosts wrote them at once) comes
// back under its size: KeepRecent yields then (dir/shared_size.go).
func TestSharedRecentYieldOverSize(t *testing.T) {
	dir := t.TempDir()
	keys := plantFiles(dir, 20, 4096)
	const capacity = 8 * 8192 // 8 of the 20 (two 4 KiB blocks each)
	s := sharedStack(t, 1<<20, dir, testTTL, DirConfig{Capacity: capacity})
	use := func() (n int) {
		for _, k := range keys {
			if _, err := os.Stat(filepath.Join(dir, k.Path())); err == nil {
				n++
			}
		}
		return n
	}
	if !eventually(10*time.Second, func() bool { return use() <= 8 }) {
		t.Fatalf("the share holds %d recent files of 20, past its size of 8", use())
	}
	t.Logf("the share holds %d recent files of 20 (size 8 files)", use())
	_ = s
}

func TestSharedTempsOfDeadProcess(t *testing.T) {
	dir := t.TempDir()
	k, _ := testBlock("m", 1, 16)
	shard := filepath.Join(dir, "m", k.ID.Shard())
	os.MkdirAll(shard, 0o755)
	host, _, _ := cutTag()
	dead := filepath.Join(shard, tier.TmpPrefix+host+"@"+strconv.Itoa(deadPID(t))+"-"+k.ID.String()+"-x")
	other := filepath.Join(shard, tier.TmpPrefix+"otherhost@1-"+k.ID.String()+"-y")
	os.WriteFile(dead, []byte("crashed here"), 0o644)
	os.WriteFile(other, []byte("another host writing"), 0o644)
	s := sharedStack(t, 1<<20, dir, testTTL, DirConfig{})
	if !eventually(5*time.Second, func() bool { return dirTier(s, 0).Scanned() }) {
		t.Fatal("scan not done")
	}
	if _, err := os.Stat(dead); err == nil {
		t.Error("the temp file of a dead process of this host was kept")
	}
	if _, err := os.Stat(other); err != nil {
		t.Error("a young temp file of another host was removed")
	}
}

// cutTag splits this process's temp tag.
func cutTag() (host, pid string, ok bool) {
	tag := dir.TempTag()
	for i := len(tag) - 1; i >= 0; i-- {
		if tag[i] == '@' {
			return tag[:i], tag[i+1:], true
		}
	}
	return "", "", false
}

// deadPID returns the pid of a process that has exited.
func deadPID(t *testing.T) int {
	p, err := os.StartProcess("/bin/true", []string{"true"}, &os.ProcAttr{})
	if err != nil {
		t.Skip(err)
	}
	pid := p.Pid
	p.Wait()
	return pid
}

// BenchmarkSharedLookup measures HasBlock on a shared tier whose index
// knows the blocks (4096 in 256 shards), with revalidation off, at the
// default TTL, and at 10ms (a stat of a shard directory every 10ms per
// shard in use): the cost of the per-shard check.
func BenchmarkSharedLookup(b *testing.B) {
	dir := b.TempDir()
	const n = 4096
	keys := plantFiles(dir, n, 64)
	past := time.Now().Add(-time.Hour) // trusted directory mtimes: checks stat, never list
	filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err == nil && e.IsDir() {
			os.Chtimes(p, past, past)
		}
		return nil
	})
	for _, c := range []struct {
		name string
		ttl  time.Duration
	}{{"revalidate=off", -1}, {"revalidate=1s", time.Second}, {"revalidate=10ms", 10 * time.Millisecond}} {
		b.Run(c.name, func(b *testing.B) {
			s := sharedStack(b, 1<<20, dir, c.ttl, DirConfig{})
			eventually(time.Minute, func() bool { return dirTier(s, 0).Scanned() })
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				k := keys[i%n]
				if !s.HasBlock(k.Model, k.ID) {
					b.Fatal("miss")
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lookups/s")
		})
	}
}

// TestSharedRescanFollowsDeletes: files removed from the share in shards
// no lookup asks about leave the tier's counts at the next rescan.
func TestSharedRescanFollowsDeletes(t *testing.T) {
	dir := t.TempDir()
	keys := plantFiles(dir, 10, 64)
	s := sharedStack(t, 1<<20, dir, testTTL, DirConfig{Rescan: 50 * time.Millisecond})
	d := s.dirs[0]
	if !eventually(5*time.Second, func() bool { return d.Usage().Files == 10 }) {
		t.Fatalf("scan: %+v", d.Usage())
	}
	for _, k := range keys[:4] {
		os.Remove(filepath.Join(dir, k.Path()))
	}
	os.RemoveAll(filepath.Join(dir, "m", keys[4].ID.Shard())) // a whole shard
	// 4 or 5 left: two keys may share a shard.
	if !eventually(5*time.Second, func() bool { return d.Usage().Files <= 5 }) {
		t.Fatalf("after the rescan: %+v", d.Usage())
	}
}
