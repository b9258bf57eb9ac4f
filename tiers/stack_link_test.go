package tiers

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/ucmfs/ucmfs/format"
	"golang.org/x/sys/unix"
)

// TestLinkOnDisk: a File whose current version is on the first directory
// tier is published under another name as a hard link of its file there
// (one inode, no copy in memory to write back), which outlives the old
// name's removal and reads the same bytes; a File only in memory is not
// linked (ErrNotFound: the caller copies it); SyncLinks syncs the links'
// directories.
func TestLinkOnDisk(t *testing.T) {
	dir := t.TempDir()
	s := newTestStack(t, 64<<20, dir, StackConfig{})
	from, to := format.FileKey("m", "a/page.bin"), format.FileKey("m", "b/page.bin")
	data := bytes.Repeat([]byte("kv"), 4096)
	if _, err := s.Put(from, data, true); err != nil {
		t.Fatal(err)
	}
	if !s.Linkable(from) {
		t.Fatal("a durable file is not linkable")
	}
	p, err := s.LinkOnDisk(from, to)
	if err != nil {
		t.Fatalf("LinkOnDisk: %v", err)
	}
	info, err := s.Publish(p, false)
	if err != nil {
		t.Fatalf("publish of the link: %v", err)
	}
	if info.Tier == Memory {
		t.Errorf("the link was published in memory")
	}
	if s.mem.Dirty(to) {
		t.Error("the link left a copy to write back")
	}
	var a, b unix.Stat_t
	if err := unix.Stat(filepath.Join(dir, from.Path()), &a); err != nil {
		t.Fatal(err)
	}
	if err := unix.Stat(filepath.Join(dir, to.Path()), &b); err != nil {
		t.Fatal(err)
	}
	if a.Ino != b.Ino || b.Nlink != 2 {
		t.Errorf("the new name is inode %d (%d links), the old %d: want one inode, two links", b.Ino, b.Nlink, a.Ino)
	}
	if err := s.SyncLinks([]format.Key{to}); err != nil {
		t.Errorf("SyncLinks: %v", err)
	}
	if err := s.Delete(from); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, s, to); !bytes.Equal(got, data) {
		t.Errorf("the link after the old name went: %d bytes", len(got))
	}

	mem := format.FileKey("m", "c/page.bin")
	if _, err := s.Put(mem, data, false); err != nil {
		t.Fatal(err)
	}
	if s.Linkable(mem) {
		t.Error("a file only in memory is linkable")
	}
	if _, err := s.LinkOnDisk(mem, format.FileKey("m", "d/page.bin")); !errors.Is(err, ErrNotFound) {
		t.Errorf("LinkOnDisk of a file only in memory: %v, want ErrNotFound", err)
	}
	if err := s.Flush(context.Background(), mem); err != nil {
		t.Fatal(err)
	}
	if !s.Linkable(mem) {
		t.Error("a file written back is not linkable")
	}
}
