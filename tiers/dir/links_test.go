package dir

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/ucmfs/ucmfs/internal/blocktest"
	"github.com/ucmfs/ucmfs/tiers/tier"
)

// TestSharedTierLinksRefused: a link planted in a shared tier's directory
// (by another host, or a tenant with access to the share) to a file
// outside it, as the block file or as its shard directory, or a
// non-file where a block should be, is served as a missing block, never
// as the file it points to.
func TestSharedTierLinksRefused(t *testing.T) {
	dir := t.TempDir()
	shared := true
	d, err := New(Config{Kind: "nfs", Dir: dir, Shared: &shared, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("root only"), 0o600); err != nil {
		t.Fatal(err)
	}
	linked, _ := blocktest.Block("m", 1, 64)
	viaDir, _ := blocktest.Block("m", 2, 64)
	fifo, _ := blocktest.Block("m", 3, 64)
	for _, k := range []struct {
		path string
		make func(p string) error
	}{
		{filepath.Join(dir, linked.Path()), func(p string) error { return os.Symlink(secret, p) }},
		{filepath.Join(dir, filepath.Dir(viaDir.Path())), func(p string) error { return os.Symlink(filepath.Dir(secret), p) }},
		{filepath.Join(dir, fifo.Path()), func(p string) error { return unix.Mkfifo(p, 0o644) }},
	} {
		if err := os.MkdirAll(filepath.Dir(k.path), 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			t.Fatal(err)
		}
		if err := k.make(k.path); err != nil {
			t.Fatal(err)
		}
	}
	// The shard link points at the secret's directory: name the secret
	// there under the block's file name.
	if err := os.Rename(secret, filepath.Join(filepath.Dir(secret), filepath.Base(viaDir.Path()))); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what string
		f    func() (*os.File, error)
	}{
		{"a linked block file", func() (*os.File, error) { return d.Open(linked) }},
		{"a block under a linked shard directory", func() (*os.File, error) { return d.Open(viaDir) }},
		{"a FIFO", func() (*os.File, error) { return d.Open(fifo) }},
	} {
		f, err := c.f()
		if err == nil {
			f.Close()
			t.Errorf("%s: opened", c.what)
		} else if !errors.Is(err, tier.ErrNotFound) {
			t.Errorf("%s: %v, want ErrNotFound", c.what, err)
		}
	}
}

// TestWriteOverPlantedLink: a link put on a share where a shard
// directory the tier knows goes (after it wrote there) does not keep the
// tier's writes failing, nor takes them: the link itself is removed, the
// directory made again, and the file lands in the tier.
func TestWriteOverPlantedLink(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	shared := true
	d, err := New(Config{Kind: "nfs", Dir: dir, Shared: &shared, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	first, data := blocktest.Block("m", 1, 64)
	blocktest.WriteFile(t, d, first, data)
	shard := filepath.Join(dir, filepath.Dir(first.Path()))
	if err := os.Rename(shard, shard+".moved"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, shard); err != nil {
		t.Fatal(err)
	}
	second := first // the same shard
	second.ID[15] ^= 0xff
	blocktest.WriteFile(t, d, second, data)
	if st, err := os.Lstat(shard); err != nil || !st.IsDir() {
		t.Fatalf("the shard after the write: %v", err)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("the directory the link pointed at now holds %v", ents)
	}
	if d.Links() == 0 {
		t.Error("the link was not counted")
	}
}
