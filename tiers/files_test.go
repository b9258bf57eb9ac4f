package tiers

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/tiers/dir"
	"github.com/ucmfs/ucmfs/tiers/rootfs"
	"github.com/ucmfs/ucmfs/tiers/rootfs/crashfs"
	"github.com/ucmfs/ucmfs/tiers/tier"
	"golang.org/x/sys/unix"
)

// TestFilesTree: Files of the files layout go through the stack like
// blocks: written back to the directory tier as the tree the engine made,
// byte for byte with their CRC-32C in the xattr and the tree mark in the
// model directory; after a restart the rebuild finds each under its path
// (the tiers' temp files removed, '.' names kept), reads return the
// bytes, fsck passes the tree, and an empty File is a File.
func TestFilesTree(t *testing.T) {
	root := t.TempDir()
	const model = "engine"
	names := []string{"config.json", "m_0123456789ab_r0/abc/de_g0/" + fmt.Sprintf("%064x", 7) + ".bin",
		"namespace-1/page_1_0_1.bin", ".lock", "deep/a/b/c/d/e", "empty",
		".tmp-x", "deep/.tmp-0123456789abcdef"} // an engine's own names: Files, not a tier's temps
	datas := map[format.Key][]byte{}
	s := newTestStack(t, 16<<20, root, StackConfig{})
	for i, n := range names {
		k := format.FileKey(model, n)
		d := bytes.Repeat([]byte{byte(i + 1)}, 1000*i)
		if _, err := s.Put(k, d, false); err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		datas[k] = d
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for k, d := range datas {
		p := filepath.Join(root, model, k.Name)
		if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, d) {
			t.Errorf("tier file %s: %v, equal %v", p, err, bytes.Equal(got, d))
		}
		var buf [8]byte
		if n, err := unix.Getxattr(p, format.CRCXattr, buf[:]); err != nil || string(buf[:n]) != fmt.Sprintf("%08x", format.CRC32C(d)) {
			t.Errorf("crc xattr of %s: %q %v", p, buf[:n], err)
		}
	}
	if _, err := os.Stat(filepath.Join(root, model, TreeMarkName)); err != nil {
		t.Fatal("no tree mark in the model directory")
	}
	leftover := filepath.Join(root, model, "deep", dir.TempName(format.FileKey(model, "deep/x").ID.String()))
	metaTemp := filepath.Join(root, model, ModelMetaName+tier.TmpPrefix+tier.RandomSuffix()) // a settings write cut short
	for _, p := range []string{leftover, metaTemp} {
		if err := os.WriteFile(p, []byte("half"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if rep, err := Fsck(root, FsckOptions{}); err != nil || rep.Bad+rep.Errors != 0 || rep.OK != len(names) || rep.Leftovers != 2 {
		t.Fatalf("fsck of the tree: %+v %v", rep, err)
	}

	s = newTestStack(t, 16<<20, root, StackConfig{})
	var listed []string
	s.List(model, func(k format.Key) bool { listed = append(listed, k.Name); return true })
	slices.Sort(listed)
	want := slices.Sorted(slices.Values(names))
	if !slices.Equal(listed, want) {
		t.Errorf("rebuilt files %q, want %q", listed, want)
	}
	for k, d := range datas {
		if got := readAll(t, s, k); !bytes.Equal(got, d) {
			t.Errorf("%s: %d bytes read, want %d", k, len(got), len(d))
		}
	}
	for _, p := range []string{leftover, metaTemp} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("the temp file %s left in the tree: %v", p, err)
		}
	}
}

// TestFilesReplace: a File published again with SetReplace replaces the
// first version in every tier (an engine's rename over its own file); a
// reader of the first keeps its bytes; a pending write renamed (Rekey)
// publishes under its new key.
func TestFilesReplace(t *testing.T) {
	root := t.TempDir()
	s := newTestStack(t, 16<<20, root, StackConfig{})
	k := format.FileKey("engine", "a/b.bin")
	if _, err := s.Put(k, []byte("first version"), true); err != nil {
		t.Fatal(err)
	}
	h, err := s.Open(k)
	if err != nil {
		t.Fatal(err)
	}
	defer h.File.Close()
	tmp := format.FileKey("engine", "a/b.bin_1234.tmp")
	p, err := s.CreateStaging(tmp)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.File().Write([]byte("second")); err != nil {
		t.Fatal(err)
	}
	p.Rekey(k)
	p.SetReplace()
	if _, err := s.Publish(p, true); err != nil {
		t.Fatalf("replacing publish: %v", err)
	}
	if got := readAll(t, s, k); string(got) != "second" {
		t.Errorf("after the replace: %q", got)
	}
	if got, err := os.ReadFile(filepath.Join(root, "engine", "a", "b.bin")); err != nil || string(got) != "second" {
		t.Errorf("tier file after the replace: %q %v", got, err)
	}
	if s.Has(tmp) {
		t.Error("the staging key was published")
	}
	old := make([]byte, 13)
	if n, err := h.File.ReadAt(old, 0); n != 13 || string(old) != "first version" {
		t.Errorf("a reader of the first version read %q (%v)", old[:n], err)
	}
}

// TestFilesKeep: the last tier never drops a file the keep rule names
// (an engine's config or lock file) when it makes room; it drops a block.
func TestFilesKeep(t *testing.T) {
	s := newTestStack(t, 16<<20, t.TempDir(), StackConfig{})
	s.SetKeep(func(k format.Key) bool { return k.Name == "config.json" })
	cfg, blk := format.FileKey("e", "config.json"), format.FileKey("e", "x/blk.bin")
	for _, k := range []format.Key{cfg, blk} {
		if _, err := s.Put(k, []byte("bytes of "+k.Name), true); err != nil {
			t.Fatal(err)
		}
	}
	last := len(s.dirs) - 1
	info := func(k format.Key) Info {
		i, _, _ := tier.IndexGet(s.dirs[last].Index(), k)
		return i
	}
	if err := s.evictFrom(last, info(cfg), false); err == nil {
		t.Error("a kept file was dropped")
	}
	if err := s.evictFrom(last, info(blk), false); err != nil {
		t.Errorf("dropping a block: %v", err)
	}
	if !s.Has(cfg) || s.Has(blk) {
		t.Errorf("after the drops: config %v, block %v", s.Has(cfg), s.Has(blk))
	}
}

// TestFilesShared: Files on a shared tier stay indexed through the
// revalidation of shards (a tree has none), and another daemon of the
// same directory adopts them with its background scan.
func TestFilesShared(t *testing.T) {
	root := t.TempDir()
	a := sharedStack(t, 1<<20, root, testTTL, DirConfig{})
	k := format.FileKey("eng", "ab/page.bin") // a directory with a shard's name
	if _, err := a.Put(k, []byte("shared file"), true); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * testTTL) // past the TTL: the next listing revalidates
	if keys := a.ShardKeys(k.Model, k.ID[0]); !slices.Contains(keys, k) {
		t.Fatalf("after a revalidation the shard lists %v, want %v", keys, k)
	}
	if !a.HasKey(k) {
		t.Fatal("the writer lost its file")
	}
	b := sharedStack(t, 1<<20, root, testTTL, DirConfig{})
	if !eventually(20*testTTL, func() bool { return b.HasKey(k) }) {
		t.Fatal("another daemon does not adopt the file")
	}
	if got := readAll(t, b, k); string(got) != "shared file" {
		t.Errorf("the other daemon reads %q", got)
	}
}

// TestFilesReplacedWhileCopied: a File replaced by a new version while
// its write-back reads the old one (the new bytes under the old CRC, or
// a CRC of part of the new bytes recorded as the new version's) is not
// corrupt:
// nothing is quarantined, the write-back leaves the new version dirty for
// its own turn, and a flush writes it to the tier. Before, the new
// version was quarantined as corrupt: a lost file.
func TestFilesReplacedWhileCopied(t *testing.T) {
	// Longer than the copy's buffer: a copy that reads the first
	// version's length of it stops after its first MiB.
	second := bytes.Repeat([]byte("second version "), 100_000)
	for _, crcKnown := range []bool{true, false} {
		t.Run(fmt.Sprintf("crc known %v", crcKnown), func(t *testing.T) {
			root := t.TempDir()
			k := format.FileKey("engine", "conf.txt")
			// The replace runs when the write-back opens the file in
			// memory, after its stat there: replaceFirst, by the memory
			// tier's filesystem.
			var s *Stack
			var armed, replaced atomic.Bool
			replaceFirst := func(op, rel string) error {
				if op != "open" || rel != k.Path() || !armed.Load() || !replaced.CompareAndSwap(false, true) {
					return nil
				}
				p, err := s.CreateStaging(k)
				if err != nil {
					t.Fatal(err)
				}
				p.File().Write(second)
				p.SetReplace()
				if _, err := s.Publish(p, false); err != nil {
					t.Fatal(err)
				}
				return nil
			}
			wrap := func(fs rootfs.FS) rootfs.FS { return crashfs.Wrap(fs, replaceFirst) }
			s = buildStack(t, StackConfig{DirtyExpire: time.Hour}, MemConfig{Capacity: 16 << 20, WrapFS: wrap}, DirConfig{Kind: "nvme", Dir: root})
			if _, err := s.Put(k, []byte("first version"), false); err != nil {
				t.Fatal(err)
			}
			if crcKnown { // the CRC the write-back checks against
				if _, has, err := s.CRC(k); err != nil || !has {
					t.Fatalf("CRC of the first version: %v %v", has, err)
				}
			}
			armed.Store(true)
			if err := s.writeBack(k, false); err != nil {
				t.Fatalf("write-back across a replace: %v", err)
			}

			if !replaced.Load() {
				t.Fatal("the replace did not run")
			}
			if err := s.Flush(context.Background(), k); err != nil {
				t.Fatalf("flush of the new version: %v", err)
			}
			if q := s.stats.quarantined.Load(); q != 0 {
				t.Fatalf("%d files quarantined", q)
			}
			if got := readAll(t, s, k); !bytes.Equal(got, second) {
				t.Fatalf("after the replace: %d bytes", len(got))
			}
			if got, err := os.ReadFile(filepath.Join(root, "engine", "conf.txt")); err != nil || !bytes.Equal(got, second) {
				t.Errorf("tier file: %d bytes, %v", len(got), err)
			}
		})
	}
}

// TestKeptFilesPassedOver: kept files at the oldest end of the last
// tier's order do not stop it making room (64 of them, of 4 bytes, made
// every later write fail with ENOSPC: the tier looked at its 64 oldest
// files only); and a last tier that holds nothing but kept files drops
// the oldest of them rather than refuse every write.
func TestKeptFilesPassedOver(t *testing.T) {
	const blockSize = 64 << 10
	s := buildStack(t, StackConfig{}, MemConfig{Capacity: 4 << 20}, DirConfig{Kind: "nvme", Dir: t.TempDir(), Capacity: 2 << 20})
	s.SetKeep(func(k format.Key) bool { return strings.HasPrefix(k.Name, ".") })
	var kept []format.Key
	for i := range 100 {
		k := format.FileKey("e", fmt.Sprintf(".lock%d", i))
		if _, err := s.Put(k, []byte("lock"), true); err != nil {
			t.Fatal(err)
		}
		kept = append(kept, k)
	}
	block := make([]byte, blockSize)
	for i := range 100 { // 6.4 MiB through a 2 MiB tier
		if _, err := s.Put(format.FileKey("e", fmt.Sprintf("b%d.bin", i)), block, true); err != nil {
			t.Fatalf("block %d: %v", i, err)
		}
	}
	for _, k := range kept {
		if !s.Has(k) {
			t.Fatalf("%s was dropped while blocks could go", k)
		}
	}
	// Nothing but kept files: the oldest go.
	for i := range 100 {
		if err := s.Delete(format.FileKey("e", fmt.Sprintf("b%d.bin", i))); err != nil && !errors.Is(err, ErrNotFound) {
			t.Fatal(err)
		}
	}
	big := make([]byte, blockSize)
	for i := 0; s.dirs[0].Usage().Used < 2<<20-blockSize; i++ {
		k := format.FileKey("e", fmt.Sprintf(".big%d", i))
		if _, err := s.Put(k, big, true); err != nil {
			t.Fatalf("kept file %d: %v", i, err)
		}
		kept = append(kept, k)
	}
	if _, err := s.Put(format.FileKey("e", "after.bin"), append(big, big...), true); err != nil {
		t.Fatalf("a block into a tier full of kept files: %v", err)
	}
	gone := 0
	for _, k := range kept {
		if !s.Has(k) {
			gone++
		}
	}
	if gone == 0 {
		t.Error("no kept file went, yet the block fit")
	}
}
