package fs

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"slices"
	"syscall"
	"testing"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/tiers"
	"github.com/ucmfs/ucmfs/vfs"
	"golang.org/x/sys/unix"
)

// TestModelDirs: mkdir makes a model with 256 shards, the root lists it,
// rm -r (os.RemoveAll) drops it from every tier.
func TestModelDirs(t *testing.T) {
	modes(t, func(t *testing.T, m *testMount) {
		const model = "Qwen--Qwen2-7B"
		if err := os.Mkdir(m.path(model), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(m.path(model), 0o755); !errors.Is(err, os.ErrExist) {
			t.Fatalf("second mkdir: %v, want EEXIST", err)
		}
		ents, err := os.ReadDir(m.path(model))
		if err != nil || len(ents) != 256 || ents[0].Name() != "00" || ents[255].Name() != "ff" || !ents[7].IsDir() {
			t.Fatalf("model lists %d entries (%v)", len(ents), err)
		}
		root, _ := os.ReadDir(m.mnt)
		if names := entNames(root); !contains(names, ".ucm") || !contains(names, model) {
			t.Fatalf("root lists %v", names)
		}
		var keys []format.Key
		for i := 0; i < 5; i++ {
			k, d := testBlock(model, i, 128)
			if err := writeFile(m.keyPath(k), d); err != nil {
				t.Fatal(err)
			}
			keys = append(keys, k)
		}
		rk, rd := testRepr(keys[0])
		if err := writeFile(m.keyPath(rk), rd); err != nil {
			t.Fatal(err)
		}
		if err := unix.Rmdir(m.path(model)); err != unix.ENOTEMPTY {
			t.Fatalf("rmdir of a model with blocks: %v, want ENOTEMPTY", err)
		}
		if err := os.RemoveAll(m.path(model)); err != nil {
			t.Fatalf("rm -r: %v", err)
		}
		if _, err := os.Stat(m.path(model)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("model after rm -r: %v", err)
		}
		n := 0
		m.st.List(model, func(format.Key) bool { n++; return true })
		if n != 0 {
			t.Fatalf("%d files of the model left in the stack", n)
		}
		root, _ = os.ReadDir(m.mnt)
		if contains(entNames(root), model) {
			t.Fatal("root still lists the model")
		}
		if err := os.Mkdir(m.path(model), 0o755); err != nil {
			t.Fatalf("mkdir after rm -r: %v", err)
		}
		if err := os.Remove(m.path(model)); err != nil {
			t.Fatalf("rmdir of an empty model: %v", err)
		}
	})
}

// TestModelsSeededAtMount: models with blocks in the tiers exist at mount.
func TestModelsSeededAtMount(t *testing.T) {
	st := newTestStack(t)
	k, d := testBlock("seeded-model", 1, 64)
	put(t, st, k, d)
	m := newMountWith(t, st, Options{Passthrough: true})
	root, _ := os.ReadDir(m.mnt)
	if !contains(entNames(root), "seeded-model") {
		t.Fatalf("root lists %v", entNames(root))
	}
	if got, err := os.ReadFile(m.keyPath(k)); err != nil || !bytes.Equal(got, d) {
		t.Fatalf("read: %v", err)
	}
}

// TestUnlink: unlink removes a block and its sidecar from every tier; a
// reader that had it open keeps its data.
func TestUnlink(t *testing.T) {
	modes(t, func(t *testing.T, m *testMount) {
		k, d := testBlock(testModel, 7, 1<<20)
		put(t, m.st, k, d)
		rk, rd := testRepr(k)
		put(t, m.st, rk, rd)
		if _, err := os.Stat(m.keyPath(rk)); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(m.keyPath(k))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := os.Remove(m.keyPath(k)); err != nil {
			t.Fatalf("unlink: %v", err)
		}
		if m.st.Has(k) || m.st.Has(rk) {
			t.Fatal("stack still holds the block or its sidecar")
		}
		if _, err := os.Stat(m.keyPath(k)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("stat after unlink: %v", err)
		}
		// The sidecar's cached entry is dropped just after the unlink
		// returns; an open asks the daemon in any case.
		if _, err := os.ReadFile(m.keyPath(rk)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("sidecar after unlink: %v", err)
		}
		got, err := io.ReadAll(f)
		if err != nil || !bytes.Equal(got, d) {
			t.Fatalf("open reader after unlink: %d bytes, %v", len(got), err)
		}
		if err := writeFile(m.keyPath(k), d); err != nil {
			t.Fatalf("write again after unlink: %v", err)
		}
	})
}

// TestGoneBehindTheKernel: a block removed by another path than the mount
// (eviction) while the kernel caches its entry: reading it is a miss, and
// it can be written again, with or without O_EXCL, read first or not.
func TestGoneBehindTheKernel(t *testing.T) {
	modes(t, func(t *testing.T, m *testMount) {
		for i, c := range []struct{ excl, read bool }{{true, true}, {false, true}, {false, false}} {
			excl := c.excl
			k, d := testBlock(testModel, 20+i, 256)
			put(t, m.st, k, d)
			if _, err := os.Stat(m.keyPath(k)); err != nil {
				t.Fatal(err)
			}
			if err := m.st.Remove(k); err != nil {
				t.Fatal(err)
			}
			if c.read {
				if _, err := os.ReadFile(m.keyPath(k)); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("read after eviction: %v, want ENOENT", err)
				}
			}
			flags := os.O_CREATE | os.O_WRONLY
			if excl {
				flags |= os.O_EXCL
			}
			f, err := os.OpenFile(m.keyPath(k), flags, 0o644)
			if err != nil {
				t.Fatalf("%+v: create after eviction: %v", c, err)
			}
			if _, err := f.Write(d); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatalf("close: %v", err)
			}
			if got, err := os.ReadFile(m.keyPath(k)); err != nil || !bytes.Equal(got, d) {
				t.Fatalf("read back: %v", err)
			}
		}
	})
}

// TestStatfs: statfs sums the tiers' capacity and use, and counts each
// published file once in its inodes.
func TestStatfs(t *testing.T) {
	// A directory tier of a fixed size, so its capacity does not follow the
	// disk's free space while the test runs, and a flush before statfs, so
	// no write-back changes the use between the two readings.
	st := newTestStackWith(t, tiers.MemConfig{Capacity: 64 << 20}, tiers.DirConfig{Kind: "nvme", Capacity: 1 << 30})
	m := newMountWith(t, st, Options{Passthrough: true})
	k, d := testBlock(testModel, 1, 1<<20)
	put(t, m.st, k, d)
	if err := m.st.FlushAll(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	var sf unix.Statfs_t
	if err := unix.Statfs(m.mnt, &sf); err != nil {
		t.Fatal(err)
	}
	var capacity, used int64
	for _, ts := range m.st.Stats().Tiers {
		capacity += ts.Capacity
		used += ts.Used
	}
	if sf.Bsize != 4096 || int64(sf.Blocks) != (capacity+4095)/4096 || int64(sf.Bfree) != (capacity-used)/4096 {
		t.Fatalf("statfs bsize %d blocks %d free %d; tiers capacity %d used %d", sf.Bsize, sf.Blocks, sf.Bfree, capacity, used)
	}
	if used < int64(len(d)) {
		t.Fatalf("tiers use %d bytes, less than the block", used)
	}
	// df -i: IUsed (files - free) is the one block, held by two tiers.
	if sf.Ffree == 0 || sf.Files < sf.Ffree || sf.Files-sf.Ffree != 1 {
		t.Fatalf("statfs files %d free %d: %d used, want 1", sf.Files, sf.Ffree, int64(sf.Files)-int64(sf.Ffree))
	}
}

// TestShardListing: a shard lists its blocks and sidecars, sorted by id
// and a block's sidecar before it (rm -r unlinks in this order, and a
// block's unlink removes its sidecar), in the directory's own order (not
// sorted by the reader), and nothing of other shards.
func TestShardListing(t *testing.T) {
	m := newMount(t, Options{})
	want := map[string][]string{}
	for i := 0; i < 600; i++ {
		k, d := testBlock(testModel, i, 64)
		put(t, m.st, k, d)
		want[k.ID.Shard()] = append(want[k.ID.Shard()], k.FileName())
		if i%3 == 0 {
			rk, rd := testRepr(k)
			put(t, m.st, rk, rd)
			want[k.ID.Shard()] = append(want[k.ID.Shard()], rk.FileName())
		}
	}
	for sh, names := range want {
		slices.SortFunc(names, vfs.NameOrder)
		f, err := os.Open(m.path(testModel, sh))
		if err != nil {
			t.Fatal(err)
		}
		got, err := f.Readdirnames(-1)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if !equalStrings(got, names) {
			t.Fatalf("shard %s lists %v, want %v", sh, got, names)
		}
	}
	var st syscall.Stat_t
	if err := syscall.Stat(m.path(testModel, format.ShardName(0xab)), &st); err != nil || st.Mode&syscall.S_IFDIR == 0 {
		t.Fatalf("empty shard: %v", err)
	}
}

func entNames(ents []os.DirEntry) []string {
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestRecordName: the name a copy of a tier's model brings its settings
// record under is the one the tiers write it under.
func TestRecordName(t *testing.T) {
	if recordName != tiers.ModelMetaName {
		t.Fatalf("recordName %q, the tiers write %q", recordName, tiers.ModelMetaName)
	}
}
