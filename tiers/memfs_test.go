package tiers

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/tiers/rootfs"
	"github.com/ucmfs/ucmfs/tiers/rootfs/memfs"
	"golang.org/x/sys/unix"
)

// memDisk is a memfs disk for an nvme tier: its path is a name under the
// test's directory (the tier's path lock is named by it), never made.
func memDisk(t *testing.T) *memfs.Disk {
	t.Helper()
	disk, err := memfs.New(filepath.Join(t.TempDir(), "nvme"), 256<<20)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { disk.Close() })
	return disk
}

// memfsStack builds a stack of a memory tier of memCap bytes over an nvme
// tier on disk.
func memfsStack(t *testing.T, disk *memfs.Disk, memCap int64, cfg StackConfig) *Stack {
	t.Helper()
	return buildStack(t, cfg, MemConfig{Capacity: memCap}, DirConfig{Kind: "nvme", Dir: disk.Dir(), OpenFS: disk.Open})
}

// view opens a second filesystem on disk, to look at what the tier left.
func view(t *testing.T, disk *memfs.Disk) rootfs.FS {
	t.Helper()
	fsys, err := disk.Open(disk.Dir(), 0o700)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fsys.Close() })
	return fsys
}

// TestStackOnMemfs: the stack's key paths with its nvme tier in memory
// (memfs, no directory on any disk): publish, write-back, eviction to the
// tier and a read from it, a file staged on the tier through its O_DIRECT
// descriptor, a replace, a remove under an open reader, and a restart
// over the same disk that rebuilds the tier's index from its names.
func TestStackOnMemfs(t *testing.T) {
	disk := memDisk(t)
	s := memfsStack(t, disk, 8<<20, StackConfig{})
	fsys := view(t, disk)
	var keys []format.Key
	var datas [][]byte
	for i := range 6 {
		k, data := testBlock("m", i, 100_000+i)
		if _, err := s.Put(k, data, i%2 == 0); err != nil {
			t.Fatal(err)
		}
		keys, datas = append(keys, k), append(datas, data)
	}
	if err := s.FlushAll(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	for i, k := range keys {
		got, err := fsys.ReadFile(k.Path())
		if err != nil {
			t.Fatal(err)
		}
		mustEqual(t, "tier file "+k.Path(), got, datas[i])
	}

	if err := s.Evict(keys[0]); err != nil {
		t.Fatal(err)
	}
	h, err := s.Open(keys[0])
	if err != nil {
		t.Fatal(err)
	}
	h.File.Close()
	if h.Tier != "nvme" {
		t.Fatalf("an evicted block read from %s, want the nvme tier", h.Tier)
	}
	mustEqual(t, "read from the tier", readAll(t, s, keys[0]), datas[0])

	staged := format.FileKey("files", "d/staged.bin")
	p, err := s.CreateOnDisk(staged)
	if err != nil {
		t.Fatal(err)
	}
	if !p.OnDisk() {
		t.Fatal("staged in memory, want on the nvme tier")
	}
	direct := bytes.Repeat([]byte("0123456789abcdef"), 512)
	writeDirect(t, p, direct)
	if info, err := s.Publish(p, true); err != nil || info.Tier != 1 {
		t.Fatalf("publish of a file staged on the tier: tier %d, %v", info.Tier, err)
	}
	if n := s.Stats().DirectWrites; n != 1 {
		t.Errorf("direct writes %d, want 1", n)
	}

	fk := format.FileKey("files", "d/f.bin")
	for _, v := range []string{"first version", "second version, longer"} {
		if err := putFile(s, fk, []byte(v), true); err != nil {
			t.Fatal(err)
		}
	}
	if got := string(readAll(t, s, fk)); got != "second version, longer" {
		t.Fatalf("after the replace: %q", got)
	}

	h, err = s.Open(keys[1])
	if err != nil {
		t.Fatal(err)
	}
	defer h.File.Close()
	if err := s.Remove(keys[1]); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := fsys.Stat(keys[1].Path(), &st); !errors.Is(err, unix.ENOENT) {
		t.Fatalf("a removed block on the tier: %v", err)
	}
	buf := make([]byte, len(datas[1]))
	if _, err := h.File.ReadAt(buf, 0); err != nil {
		t.Fatalf("an open reader after the remove: %v", err)
	}
	mustEqual(t, "reader after the remove", buf, datas[1])

	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	s = memfsStack(t, disk, 8<<20, StackConfig{})
	for i, k := range keys {
		if i == 1 {
			if _, err := s.Open(k); !errors.Is(err, ErrNotFound) {
				t.Fatalf("a removed block after the restart: %v", err)
			}
			continue
		}
		bi, err := s.Stat(k)
		if err != nil || bi.Holders[0] != "nvme" {
			t.Fatalf("%s after the restart: %+v %v", k, bi, err)
		}
		mustEqual(t, "after the restart", readAll(t, s, k), datas[i])
	}
	mustEqual(t, "the staged file after the restart", readAll(t, s, staged), direct)
	if got := string(readAll(t, s, fk)); got != "second version, longer" {
		t.Fatalf("the replaced file after the restart: %q", got)
	}
}

// TestSoakOnMemfs: a short seeded run of publishes (durable or not),
// replaces, removals, evictions, flushes, reads and clean restarts on a
// stack whose nvme tier is in memory and whose memory tier is small (so
// write-back and eviction under pressure run all the time); every read
// gives the version last published, and a removed name is not found.
func TestSoakOnMemfs(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 0))
			disk := memDisk(t)
			cfg := StackConfig{RetryDelay: 5 * time.Millisecond, RoomWait: 200 * time.Millisecond}
			s := memfsStack(t, disk, 256<<10, cfg)
			want := map[format.Key][]byte{}
			var log []string
			var seen Stats // of the stacks closed so far, and the last
			restarts := 0
			add := func(st Stats) {
				seen.WriteBacks += st.WriteBacks
				seen.Evictions += st.Evictions
				seen.LowerHits += st.LowerHits
			}
			fail := func(format string, args ...any) {
				t.Helper()
				t.Fatalf("seed %d: %s\noperations:\n%v", seed, fmt.Sprintf(format, args...), log)
			}
			for i := range 300 {
				k := format.FileKey("files", fmt.Sprintf("d%d/f%d.bin", r.IntN(3), r.IntN(4)))
				switch op := r.IntN(10); {
				case op < 4:
					data := make([]byte, 1+r.IntN(96<<10))
					for j := range data {
						data[j] = byte(i + j)
					}
					durable := r.IntN(2) == 0
					log = append(log, fmt.Sprintf("put %s %d durable=%v", k, len(data), durable))
					if err := putFile(s, k, data, durable); err != nil {
						fail("put %s: %v", k, err)
					}
					want[k] = data
				case op == 4:
					log = append(log, "remove "+k.String())
					err := s.Remove(k)
					if _, held := want[k]; held && err != nil || !held && !errors.Is(err, ErrNotFound) {
						fail("remove %s: %v (held %v)", k, err, held)
					}
					delete(want, k)
				case op == 5:
					log = append(log, "evict "+k.String())
					s.Evict(k) // refused when memory holds the only copy
				case op == 6:
					log = append(log, "flush")
					if err := s.FlushAll(context.Background(), ""); err != nil {
						fail("flush: %v", err)
					}
				case op == 7 && r.IntN(4) == 0:
					log = append(log, "restart")
					add(s.Stats())
					if err := s.Close(context.Background()); err != nil {
						fail("close: %v", err)
					}
					s = memfsStack(t, disk, 256<<10, cfg)
					restarts++
				default:
					log = append(log, "read "+k.String())
					data, held := want[k]
					h, err := s.Open(k)
					if !held {
						if !errors.Is(err, ErrNotFound) {
							fail("read of removed %s: %v", k, err)
						}
						continue
					}
					if err != nil {
						fail("read %s: %v", k, err)
					}
					h.File.Close()
					if got := readAll(t, s, k); !bytes.Equal(got, data) {
						fail("read %s: %d bytes, not the %d of its last version", k, len(got), len(data))
					}
				}
			}
			add(s.Stats())
			t.Logf("seed %d: %d restarts, %d write-backs, %d evictions, %d reads from the nvme tier",
				seed, restarts, seen.WriteBacks, seen.Evictions, seen.LowerHits)
			if restarts == 0 || seen.WriteBacks == 0 || seen.Evictions == 0 || seen.LowerHits == 0 {
				t.Errorf("seed %d did not go through the tier: %d restarts, %d write-backs, %d evictions, %d reads from it",
					seed, restarts, seen.WriteBacks, seen.Evictions, seen.LowerHits)
			}
		})
	}
}

// lockedLog is a log the tiers' goroutines write into.
type lockedLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestSharedTierOnMemfs: a shared tier (nfs) on memfs finds, when it
// probes its filesystem, all that the sharing relies on
// (RENAME_NOREPLACE, user xattrs, a directory mtime that moves when a
// file is added), and publishes and reads back through it.
func TestSharedTierOnMemfs(t *testing.T) {
	disk := memDisk(t)
	var logs lockedLog
	dc := DirConfig{Kind: "nfs", Dir: disk.Dir(), OpenFS: disk.Open, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	s := buildStack(t, StackConfig{}, MemConfig{Capacity: 8 << 20}, dc)
	if !s.dirs[0].Shared() {
		t.Fatal("an nfs tier does not share")
	}
	waitFor(t, "the shared tier's background scan (the probe runs first)", dirTier(s, 0).Scanned)
	if strings.Contains(logs.String(), "lacks") {
		t.Fatalf("the probe found memfs lacking:\n%s", logs.String())
	}
	k, data := testBlock("m", 1, 64<<10)
	if _, err := s.Put(k, data, true); err != nil {
		t.Fatal(err)
	}
	if err := s.Evict(k); err != nil {
		t.Fatal(err)
	}
	mustEqual(t, "read from the shared tier", readAll(t, s, k), data)
	got, err := view(t, disk).ReadFile(k.Path())
	if err != nil {
		t.Fatal(err)
	}
	mustEqual(t, "the shared tier's file", got, data)
}
