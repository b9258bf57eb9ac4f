package fs

import (
	"fmt"
	"os"
	"testing"

	"github.com/ucmfs/ucmfs/tiers"
	"golang.org/x/sys/unix"
)

// TestKeptFilesDoNotFillTier: a user's dot files (an engine's own files,
// never dropped while anything else may be) in a files model do not stop
// the last tier making room: before, 70 of them at the oldest end of its
// order made every write fail with ENOSPC once the tier filled; and
// files named so cannot fill it for good.
func TestKeptFilesDoNotFillTier(t *testing.T) {
	st := newTestStackWith(t, tiers.MemConfig{Capacity: 16 << 20}, tiers.DirConfig{Kind: "nvme", Capacity: 24 << 20})
	m := newMountWith(t, st, Options{Passthrough: true})
	if err := os.Mkdir(m.path("eng"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Setxattr(m.path("eng"), "user.ucm.layout", []byte("files"), 0); err != nil {
		t.Fatal(err)
	}
	write := func(name string, size int) error {
		f, err := os.OpenFile(m.path("eng", name), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
		if err != nil {
			return err
		}
		if _, err := f.Write(make([]byte, size)); err != nil {
			f.Close()
			return err
		}
		if err := f.Sync(); err != nil { // on the tier now, as long after
			f.Close()
			return err
		}
		return f.Close()
	}
	for i := range 70 {
		if err := write(fmt.Sprintf(".k%d", i), 2); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 40 { // 80 MiB through a 24 MiB tier
		if err := write(fmt.Sprintf("b%d.bin", i), 2<<20); err != nil {
			t.Fatalf("block %d: %v", i, err)
		}
	}
	for i := range 70 {
		if _, err := os.Stat(m.path("eng", fmt.Sprintf(".k%d", i))); err != nil {
			t.Fatalf("a kept file went while blocks could: %v", err)
		}
	}
	for i := range 20 { // 40 MiB of kept files: the oldest of them go
		if err := write(fmt.Sprintf(".big%d", i), 2<<20); err != nil {
			t.Fatalf("kept file %d: %v", i, err)
		}
	}
}
