package main

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestMountedAtEscapedPath: the mount table escapes a space, a tab and a
// backslash in a mount point (\040, \011, \134); mountedAt still finds it.
func TestMountedAtEscapedPath(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir := filepath.Join(t.TempDir(), "my disk\tx\\y")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	if fstype, ok := mountedAt(dir); !ok || fstype != "tmpfs" {
		t.Errorf("mountedAt(%q) = %q, %v; want tmpfs, true", dir, fstype, ok)
	}
}

func TestMountedAt(t *testing.T) {
	if fstype, ok := mountedAt("/proc"); !ok || fstype != "proc" {
		t.Errorf("mountedAt(/proc) = %q, %v; want proc, true", fstype, ok)
	}
	dir := t.TempDir()
	if fstype, ok := mountedAt(dir); ok {
		t.Errorf("mountedAt(%s) = %q, true; it is a plain directory", dir, fstype)
	}
}

func TestCheckMountpoint(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	os.Mkdir(empty, 0o755)
	if err := checkMountpoint(empty); err != nil {
		t.Errorf("empty directory refused: %v", err)
	}
	hidden := filepath.Join(dir, "hidden")
	os.Mkdir(hidden, 0o755)
	os.WriteFile(filepath.Join(hidden, ".keep"), nil, 0o644)
	if err := checkMountpoint(hidden); err == nil {
		t.Error("a directory holding a dot file was accepted")
	}
}
