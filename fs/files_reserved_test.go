package fs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestFilesReservedNames: at a files model's root, the names of the
// records the tiers keep there (the settings record, its temp files, the
// tree mark) are EINVAL for create, mkdir and rename, and a lookup finds
// nothing; the record on the disk tier stays the model's. Below the root
// they are names like any other. Before, a create of .ucmfs-model.json
// wrote over the settings record: the model came back after a restart as
// the daemon's, 0700.
func TestFilesReservedNames(t *testing.T) {
	m := newMount(t, Options{})
	m.model(t, "eng", "files")
	if err := os.WriteFile(m.path("eng", "page"), []byte("kv"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{".ucmfs-model.json", ".ucmfs-tree", ".ucmfs-model.json.tmp-0123456789abcdef"} {
		p := m.path("eng", name)
		if err := os.WriteFile(p, []byte("x"), 0o644); !errors.Is(err, syscall.EINVAL) {
			t.Errorf("create %s: %v, want EINVAL", name, err)
		}
		if err := os.Mkdir(p, 0o755); !errors.Is(err, syscall.EINVAL) {
			t.Errorf("mkdir %s: %v, want EINVAL", name, err)
		}
		if err := os.Rename(m.path("eng", "page"), p); !errors.Is(err, syscall.EINVAL) {
			t.Errorf("rename to %s: %v, want EINVAL", name, err)
		}
		if _, err := os.Stat(p); !errors.Is(err, syscall.ENOENT) {
			t.Errorf("stat %s: %v, want ENOENT", name, err)
		}
		// Below the root: an ordinary name.
		if err := os.MkdirAll(m.path("eng", "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(m.path("eng", "sub", name), []byte("y"), 0o644); err != nil {
			t.Errorf("create sub/%s: %v", name, err)
		}
	}
	rec := filepath.Join(m.st.Tiers()[1].Dir, "eng", ".ucmfs-model.json")
	if b, err := os.ReadFile(rec); err != nil || !strings.Contains(string(b), `"files"`) {
		t.Errorf("the model's settings record on the disk tier: %q, %v", b, err)
	}
}

// TestFilesNameTooLong: in a files model a name of 255 bytes works and
// one of 256 is ENAMETOOLONG for create, mkdir and stat, as on a local
// disk; so is a path past format.MaxFilePath (it was EINVAL, and a stat
// ENOENT).
func TestFilesNameTooLong(t *testing.T) {
	m := newMount(t, Options{})
	m.model(t, "eng", "files")
	if err := os.WriteFile(m.path("eng", strings.Repeat("a", 255)), []byte("kv"), 0o644); err != nil {
		t.Fatalf("a 255-byte name: %v", err)
	}
	long := m.path("eng", strings.Repeat("b", 256))
	if err := os.WriteFile(long, []byte("kv"), 0o644); !errors.Is(err, syscall.ENAMETOOLONG) {
		t.Errorf("create of a 256-byte name: %v, want ENAMETOOLONG", err)
	}
	if err := os.Mkdir(long, 0o755); !errors.Is(err, syscall.ENAMETOOLONG) {
		t.Errorf("mkdir of a 256-byte name: %v, want ENAMETOOLONG", err)
	}
	if _, err := os.Stat(long); !errors.Is(err, syscall.ENAMETOOLONG) {
		t.Errorf("stat of a 256-byte name: %v, want ENAMETOOLONG", err)
	}
	deep := m.path("eng")
	for len(deep) < len(m.path("eng"))+3000 {
		deep = filepath.Join(deep, strings.Repeat("d", 200))
	}
	if err := os.MkdirAll(deep, 0o755); !errors.Is(err, syscall.ENAMETOOLONG) {
		t.Errorf("mkdir -p of a path of %d bytes: %v, want ENAMETOOLONG", len(deep), err)
	}
}
