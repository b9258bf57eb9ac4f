package fs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ucmfs/ucmfs/tiers"
	"github.com/ucmfs/ucmfs/tiers/rootfs/crashfs"
	"golang.org/x/sys/unix"
)

// TestFilesDirRenameRecordLeft (store soak's move-record-left): after a
// directory rename whose record the tier could not drop at its end (the
// settings record refused, EDQUOT), nothing is made beneath the old name
// (mkdir, a directory renamed there: ENOSPC) until the record can be
// dropped, so the next start, which finishes a record it finds, has
// nothing to move; elsewhere the model is as before, and once the tier
// takes the settings again the old name is free. Before, mkdir of the
// old name succeeded at once, and what was published beneath it moved to
// the new name at the next start.
func TestFilesDirRenameRecordLeft(t *testing.T) {
	requireFUSE(t)
	disk, err := crashfs.New(filepath.Join(t.TempDir(), "nvme"))
	if err != nil {
		t.Fatal(err)
	}
	st := newTestStackWith(t, tiers.MemConfig{Capacity: 64 << 20}, tiers.DirConfig{Kind: "nvme", Dir: disk.Dir(), OpenFS: disk.Open})
	m := newMountWith(t, st, Options{})
	m.model(t, "eng", "files")
	p := func(rel string) string { return m.path("eng", rel) }
	if err := os.Mkdir(p("d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p("d/x.bin"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	var full atomic.Bool
	disk.SetFault(func(op, rel string) error {
		if (op == "mkdir" || op == "link") && strings.HasPrefix(rel, "eng/e") {
			full.Store(true) // recorded: the move's first step
		}
		if full.Load() && strings.Contains(rel, tiers.ModelMetaName) {
			return &os.PathError{Op: op, Path: rel, Err: unix.EDQUOT}
		}
		return nil
	})
	if err := unix.Rename(p("d"), p("e")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(p("d"), 0o755); !errors.Is(err, unix.ENOSPC) {
		t.Errorf("mkdir of the old name while its record is left: %v, want ENOSPC", err)
	}
	if err := unix.Rename(p("e"), p("d")); !errors.Is(err, unix.ENOSPC) {
		t.Errorf("rename of a directory to the old name while its record is left: %v, want ENOSPC", err)
	}
	if err := os.Mkdir(p("f"), 0o755); err != nil {
		t.Errorf("mkdir elsewhere: %v", err)
	}
	disk.SetFault(nil)
	if err := os.Mkdir(p("d"), 0o755); err != nil {
		t.Fatalf("mkdir of the old name, the tier healed: %v", err)
	}
	if err := os.WriteFile(p("d/later.bin"), []byte("later"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(p("e/x.bin")); string(got) != "x" || err != nil {
		t.Errorf("e/x.bin: %q %v", got, err)
	}
}
