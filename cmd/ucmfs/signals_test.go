package main

import (
	"os"
	"path/filepath"
	"testing"
)

func TestUnescapeMountinfo(t *testing.T) {
	for in, want := range map[string]string{
		`/mnt/kv`:           "/mnt/kv",
		`/mnt/my\040disk`:   "/mnt/my disk",
		`/a\011b\012c\134d`: "/a\tb\nc\\d",
		`/trailing\04`:      `/trailing\04`,
		`/not\999octal\`:    `/not\999octal\`,
		`/x\040`:            "/x ",
	} {
		if got := unescapeMountinfo(in); got != want {
			t.Errorf("unescapeMountinfo(%q) = %q, want %q", in, got, want)
		}
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
