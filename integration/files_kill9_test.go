package integration

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestFilesReplacedKill9: a durable file of a files model replaced by a
// version not written back yet (a rename over it, an O_TRUNC rewrite,
// neither fsynced) is still there after a kill -9 of the daemon, whole,
// one of its two versions; a durable file replaced and then unlinked
// stays gone. The replace took the old version off the tier at once, so
// the kill lost the name (docs/semantics.md, "The files layout").
func TestFilesReplacedKill9(t *testing.T) {
	dir := testDir(t)
	mnt, tier := filepath.Join(dir, "mnt"), filepath.Join(dir, "tier")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	opts := mountOpts{Mnt: mnt, Tier: tier, Args: []string{"--default-layout", "files", "--dirty-expire", "1h"}}
	d := mountUCM(t, opts)
	root := d.path("m")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, data string, flags int, sync bool) {
		t.Helper()
		fd, err := unix.Open(filepath.Join(root, name), unix.O_WRONLY|flags, 0o644)
		if err != nil {
			t.Fatalf("open %s: %v", name, err)
		}
		defer unix.Close(fd)
		if _, err := unix.Write(fd, []byte(data)); err != nil {
			t.Fatalf("write %s: %v", name, err)
		}
		if sync {
			if err := unix.Fsync(fd); err != nil {
				t.Fatalf("fsync %s: %v", name, err)
			}
		}
	}
	const v1, v2 = "the first version, fsynced", "the second version, not fsynced yet"
	for _, name := range []string{"renamed.bin", "rewritten.bin", "unlinked.bin"} {
		write(name, v1, unix.O_CREAT|unix.O_EXCL, true)
	}
	write("renamed.bin.tmp", v2, unix.O_CREAT|unix.O_EXCL, false)
	if err := os.Rename(filepath.Join(root, "renamed.bin.tmp"), filepath.Join(root, "renamed.bin")); err != nil {
		t.Fatal(err)
	}
	write("rewritten.bin", v2, unix.O_TRUNC, false)
	write("unlinked.bin", v2, unix.O_TRUNC, false)
	if err := os.Remove(filepath.Join(root, "unlinked.bin")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"renamed.bin", "rewritten.bin"} {
		if got, err := os.ReadFile(filepath.Join(root, name)); err != nil || string(got) != v2 {
			t.Fatalf("%s before the kill: %q, %v", name, got, err)
		}
	}
	d.kill()
	d.detach()

	d = mountUCM(t, opts)
	for _, name := range []string{"renamed.bin", "rewritten.bin"} {
		got, err := os.ReadFile(d.path("m", name))
		if err != nil {
			t.Errorf("%s, durable before it was replaced, after a kill -9: %v", name, err)
		} else if string(got) != v1 && string(got) != v2 {
			t.Errorf("%s after a kill -9: %q, neither version", name, got)
		}
	}
	if _, err := os.Stat(d.path("m", "unlinked.bin")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("unlinked.bin, replaced and then unlinked, after a kill -9: %v, want ENOENT", err)
	}
	if _, err := os.Stat(d.path("m", "renamed.bin.tmp")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("renamed.bin.tmp, renamed before the kill -9: %v, want ENOENT", err)
	}
	if code := d.stop(); code != 0 {
		t.Fatalf("SIGTERM: exit %d", code)
	}
}
