package dir_test

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/internal/tiertest"
	"github.com/ucmfs/ucmfs/tiers/dir"
	"github.com/ucmfs/ucmfs/tiers/tier"
	"golang.org/x/sys/unix"
)

// quiet discards the tiers' log lines in tests.
var quiet = slog.New(slog.DiscardHandler)

func ptr[T any](v T) *T { return &v }

// newDir opens a DirTier on cfg.Dir (a fresh temp dir when empty) and
// closes it after the test.
func newDir(t testing.TB, cfg dir.Config) *dir.Tier {
	t.Helper()
	if cfg.Kind == "" {
		cfg.Kind = "nvme"
	}
	if cfg.Dir == "" {
		cfg.Dir = t.TempDir()
	}
	if cfg.Logger == nil {
		cfg.Logger = quiet
	}
	d, err := dir.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// directSupported reports whether dir's filesystem accepts O_DIRECT.
func directSupported(t testing.TB, root string) bool {
	fd, err := unix.Open(filepath.Join(root, "odirect-probe"), unix.O_CREAT|unix.O_RDWR|unix.O_DIRECT, 0o600)
	if err != nil {
		return false
	}
	unix.Close(fd)
	os.Remove(filepath.Join(root, "odirect-probe"))
	return true
}

func TestDirConformance(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  dir.Config
	}{
		{"nvme", dir.Config{Kind: "nvme"}},
		{"nvme-direct-sync", dir.Config{Kind: "nvme", DirectIO: ptr(true), SyncOnCommit: ptr(true)}},
		{"nfs", dir.Config{Kind: "nfs"}},
		{"ds3fs", dir.Config{Kind: "ds3fs"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			tiertest.Run(t, func(t *testing.T) tier.Tier {
				cfg := c.cfg
				cfg.Capacity = 64 << 20
				return newDir(t, cfg)
			})
		})
	}
}

func TestDirLayout(t *testing.T) {
	d := newDir(t, dir.Config{Capacity: 1 << 30})
	key := tiertest.Key("meta-llama--Llama-3.1-8B", 1)
	data := tiertest.Payload(1, 2<<20+64)
	tiertest.Put(t, d, key, data, tier.CommitOptions{})
	p := filepath.Join(d.Dir(), key.Path())
	got, err := os.ReadFile(p)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("file %s: %d bytes, %v; want the %d bytes written", p, len(got), err, len(data))
	}
	fi, _ := os.Stat(p)
	if fi.Mode().Perm() != 0o444 {
		t.Fatalf("mode %v, want 0444", fi.Mode().Perm())
	}
	ents, _ := os.ReadDir(filepath.Dir(p))
	if len(ents) != 1 {
		t.Fatalf("shard directory holds %d entries, want only the block", len(ents))
	}
	if d.Kind() != "nvme" || d.Name() != "nvme" || !d.Persistent() {
		t.Fatal("kind, name or persistence wrong")
	}
}

func TestDirConfigChecks(t *testing.T) {
	for _, cfg := range []dir.Config{
		{Kind: "tape", Dir: t.TempDir()},
		{Kind: "nvme"},
		{Kind: "nvme", Dir: t.TempDir(), HighWatermark: 0.5, LowWatermark: 0.7},
		{Kind: "nvme", Dir: t.TempDir(), HighWatermark: 1.5},
		{Kind: "nvme", Dir: t.TempDir(), Capacity: -1},
	} {
		cfg.Logger = quiet
		if d, err := dir.New(cfg); err == nil {
			d.Close()
			t.Errorf("NewDirTier(%+v) accepted a bad config", cfg)
		}
	}
	// Capacity 0: what the tier holds plus the free space.
	root := t.TempDir()
	d := newDir(t, dir.Config{Dir: root})
	var st unix.Statfs_t
	unix.Statfs(root, &st)
	free := int64(st.Bavail) * st.Frsize
	if c := d.Usage().Capacity; c < free/2 || c > 2*free {
		t.Fatalf("capacity %d, free space %d", c, free)
	}
}

func TestDirExclusiveForUnshared(t *testing.T) {
	root := t.TempDir()
	newDir(t, dir.Config{Dir: root})
	if d, err := dir.New(dir.Config{Kind: "nvme", Dir: root, Logger: quiet}); err == nil {
		d.Close()
		t.Fatal("two nvme tiers opened one directory")
	}
	shared := t.TempDir()
	newDir(t, dir.Config{Kind: "nfs", Dir: shared})
	newDir(t, dir.Config{Kind: "nfs", Dir: shared})
}

func TestDirReopenRebuilds(t *testing.T) {
	root := t.TempDir()
	d, err := dir.New(dir.Config{Kind: "nvme", Dir: root, Capacity: 1 << 30, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	sizes := map[format.Key]int{}
	var total int64
	base := time.Now().Add(-time.Hour)
	for i := 0; i < 6; i++ {
		key := tiertest.Key([]string{"a", "b"}[i%2], i)
		size := 1000 * (i + 1)
		opts := tier.CommitOptions{}
		if i == 0 {
			opts = tier.CommitOptions{CRC: 0x0badf00d, HasCRC: true}
		}
		tiertest.Put(t, d, key, tiertest.Payload(uint64(i), size), opts)
		sizes[key] = size
		total += int64(size)
		// Publish times in reverse order of i: 5 is the oldest.
		mt := base.Add(time.Duration(10-i) * time.Minute)
		os.Chtimes(filepath.Join(root, key.Path()), mt, mt)
	}
	// A crashed write, names outside the layout.
	k0 := tiertest.Key("a", 0)
	shard := filepath.Join(root, "a", k0.ID.Shard())
	tmp := filepath.Join(shard, ".tmp-"+k0.ID.String()+"-dead")
	os.WriteFile(tmp, []byte("partial"), 0o444)
	os.WriteFile(filepath.Join(shard, "notes.txt"), []byte("x"), 0o644)
	os.Mkdir(filepath.Join(root, "Bad Model"), 0o755)
	os.Mkdir(filepath.Join(root, "a", "zz"), 0o755)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}

	d = newDir(t, dir.Config{Dir: root, Capacity: 1 << 30})
	if u := d.Usage(); u.Files != 6 || u.Used != total {
		t.Fatalf("rebuilt usage %+v, want 6 files, %d bytes", u, total)
	}
	for key, size := range sizes {
		info, err := d.Stat(key)
		if err != nil || info.Size != int64(size) {
			t.Fatalf("rebuilt %s: %+v %v", key, info, err)
		}
		if !bytes.Equal(tiertest.Read(t, d, key), tiertest.Payload(uint64(indexOf(t, key)), size)) {
			t.Fatalf("%s has other bytes after reopen", key)
		}
	}
	if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("temp file of a crashed write survived the rebuild")
	}
	if _, err := os.Stat(filepath.Join(shard, "notes.txt")); err != nil {
		t.Fatal("a file outside the layout was removed; it must only be skipped")
	}
	// A rebuilt entry's CRC is read from the xattr when asked, not by Stat.
	if info, _ := d.Stat(k0); info.HasCRC {
		t.Fatalf("Stat read the CRC of a rebuilt file: %+v", info)
	}
	if crc, has, err := d.CRC(k0); err != nil || !has || crc != 0x0badf00d {
		t.Fatalf("CRC not read back from the xattr: %08x %v %v", crc, has, err)
	}
	if info, _ := d.Stat(k0); !info.HasCRC || info.CRC != 0x0badf00d {
		t.Fatalf("the CRC read once is not kept: %+v", info)
	}
	if _, has, err := d.CRC(tiertest.Key("b", 1)); err != nil || has {
		t.Fatalf("a file without CRC got one: %v %v", has, err)
	}
	if _, _, err := d.CRC(tiertest.Key("b", 99)); !errors.Is(err, tier.ErrNotFound) {
		t.Fatalf("CRC of an absent file: %v, want ErrNotFound", err)
	}
}

// indexOf recovers i from a key made by tiertest.Key in TestDirReopenRebuilds.
func indexOf(t *testing.T, key format.Key) int {
	for i := 0; i < 6; i++ {
		if tiertest.Key(key.Model, i) == key {
			return i
		}
	}
	t.Fatalf("unknown key %s", key)
	return 0
}

func TestDirRebuildLRUByMTime(t *testing.T) {
	root := t.TempDir()
	d, err := dir.New(dir.Config{Kind: "nvme", Dir: root, Capacity: 1 << 30, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	order := []int{3, 0, 4, 1, 2} // oldest first
	base := time.Now().Add(-time.Hour)
	for rank, i := range order {
		key := tiertest.Key("m", i)
		tiertest.Put(t, d, key, []byte("x"), tier.CommitOptions{})
		mt := base.Add(time.Duration(rank) * time.Minute)
		os.Chtimes(filepath.Join(root, key.Path()), mt, mt)
	}
	d.Close()
	// The times were set behind the tier's back: a snapshot would keep the
	// publish times (snapshot.go), so this start lists the files.
	os.Remove(filepath.Join(root, dir.SnapshotFileName))
	d = newDir(t, dir.Config{Dir: root, Capacity: 1 << 30})
	got := d.Oldest(10)
	if len(got) != len(order) {
		t.Fatalf("Oldest: %d files", len(got))
	}
	for rank, i := range order {
		if got[rank].Key != tiertest.Key("m", i) {
			t.Fatalf("Oldest[%d] = %s, want block %d", rank, got[rank].Key, i)
		}
	}
}

// TestDirWatermarks: the watermarks and the capacity count what the files
// take, in the tier's unit (a page: sizes here are whole pages).
func TestDirWatermarks(t *testing.T) {
	const page = 4096
	d := newDir(t, dir.Config{Capacity: 10 * page, HighWatermark: 0.5, LowWatermark: 0.3})
	if d.LowTarget() != 3*page {
		t.Fatalf("LowTarget %d, want %d", d.LowTarget(), 3*page)
	}
	tiertest.Put(t, d, tiertest.Key("m", 0), tiertest.Payload(0, 3*page), tier.CommitOptions{})
	tiertest.Put(t, d, tiertest.Key("m", 1), tiertest.Payload(1, 2*page), tier.CommitOptions{})
	if d.OverHigh() {
		t.Fatal("OverHigh at exactly the high watermark")
	}
	tiertest.Put(t, d, tiertest.Key("m", 2), tiertest.Payload(2, page), tier.CommitOptions{})
	if !d.OverHigh() {
		t.Fatal("not OverHigh at 60%")
	}
	d.Touch(tiertest.Key("m", 0))
	old := d.Oldest(2)
	if len(old) != 2 || old[0].Key != tiertest.Key("m", 1) || old[1].Key != tiertest.Key("m", 2) {
		t.Fatalf("Oldest(2) = %v", old)
	}
	// Over capacity: ErrFull, and the Writer stays usable.
	w, err := d.Create(tiertest.Key("m", 3))
	if err != nil {
		t.Fatal(err)
	}
	data := tiertest.Payload(3, 5*page)
	w.Write(data)
	if _, err := w.Commit(tier.CommitOptions{}); !errors.Is(err, tier.ErrFull) {
		t.Fatalf("commit over capacity: %v", err)
	}
	if err := d.Remove(tiertest.Key("m", 0)); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Commit(tier.CommitOptions{}); err != nil {
		t.Fatalf("retried commit: %v", err)
	}
	if u := d.Usage(); u.Used != 8*page || u.Files != 3 {
		t.Fatalf("usage %+v", u)
	}
}

func TestDirNoReplace(t *testing.T) {
	d := newDir(t, dir.Config{Capacity: 1 << 20})
	key := tiertest.Key("m", 1)
	// Another writer published the name behind the index's back.
	p := filepath.Join(d.Dir(), key.Path())
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte("theirs"), 0o444); err != nil {
		t.Fatal(err)
	}
	w, err := d.Create(key)
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("mine, longer"))
	if _, err := w.Commit(tier.CommitOptions{}); !errors.Is(err, tier.ErrExist) {
		t.Fatalf("commit over an existing file: %v, want ErrExist", err)
	}
	if got, _ := os.ReadFile(p); string(got) != "theirs" {
		t.Fatalf("existing file replaced: %q", got)
	}
	ents, _ := os.ReadDir(filepath.Dir(p))
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".tmp-") {
			t.Fatalf("temp file %s left after ErrExist", e.Name())
		}
	}
}

// TestDirTinyFilesCharged: a file takes at least a block of a directory
// tier's capacity (what its filesystem spends on it), so empty and tiny
// files cannot pile up without bound while the capacity shows room.
func TestDirTinyFilesCharged(t *testing.T) {
	const page = 4096
	d := newDir(t, dir.Config{Capacity: 4 * page})
	for i := range 4 {
		tiertest.Put(t, d, tiertest.Key("m", i), tiertest.Payload(uint64(i), 1+i), tier.CommitOptions{})
	}
	w, err := d.Create(tiertest.Key("m", 4))
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte{1})
	if _, err := w.Commit(tier.CommitOptions{}); !errors.Is(err, tier.ErrFull) {
		t.Fatalf("a fifth tiny file in four blocks: %v, want ErrFull", err)
	}
	w.Abort()
	if u := d.Usage(); u.Used != 1+2+3+4 || u.Charged != 4*page || u.Files != 4 {
		t.Fatalf("usage %+v", u)
	}
}
