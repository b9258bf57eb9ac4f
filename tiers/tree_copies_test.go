package tiers

import (
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/tiers/rootfs/crashfs"
)

// TestRemoveDirAfterCopy: a File removed while its write-back runs, and
// its directory removed then (an unlink then rmdir, or a directory
// moved), leaves no directory on the tier: RemoveDir waits for the copy
// to make its writer, then removes the writer's temp file with the
// directory. Before, the write-back made the directory again after
// RemoveDir removed it: the engine's removed directory came back in its
// parent's listing, and a directory moved back onto that name failed
// ENOTEMPTY.
func TestRemoveDirAfterCopy(t *testing.T) {
	dir := t.TempDir()
	k := format.FileKey("eng", "a/s3/f.bin")
	// The file and its directories go when the copy, having opened the
	// source, makes its writer on the tier: removeFirst, by the directory
	// tier's filesystem, at its first operation in the model's directory.
	var s *Stack
	var armed, ran atomic.Bool
	removed := make(chan error, 2)
	waiting := make(chan struct{})
	removeFirst := func(op, rel string) error {
		if !strings.HasPrefix(rel, "eng/") || !armed.Load() || !ran.CompareAndSwap(false, true) {
			return nil
		}
		if err := s.Delete(k); err != nil {
			t.Error(err)
		}
		go func() {
			err := s.RemoveDir("eng", "a/s3")
			if err == nil {
				err = s.RemoveDir("eng", "a")
			}
			removed <- err
		}()
		select {
		case <-waiting: // the removal waits for this copy: go on
		case err := <-removed: // done before the copy made its writer
			removed <- err
		}
		return nil
	}
	s = buildStack(t, StackConfig{DirtyExpire: time.Hour}, MemConfig{Capacity: 16 << 20},
		DirConfig{Kind: "nvme", Dir: dir, OpenFS: crashfs.OpenWrapped(removeFirst)})
	if err := s.MakeDir("eng", "a"); err != nil {
		t.Fatal(err)
	}
	if err := s.MakeDir("eng", "a/s3"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(k, []byte("page"), false); err != nil {
		t.Fatal(err)
	}
	s.copies.waiting = func() { close(waiting) }
	armed.Store(true)
	if err := s.writeBack(k, false); err != nil {
		t.Logf("write-back of the removed file: %v", err)
	}
	if !ran.Load() {
		t.Fatal("the removal did not run")
	}
	if err := <-removed; err != nil {
		t.Fatalf("RemoveDir: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "eng", "a")); !os.IsNotExist(err) {
		t.Errorf("the removed directory is on the tier: %v", err)
	}
	if subdirs := s.TreeSubdirs("eng", ""); len(subdirs) != 0 {
		t.Errorf("the model's root lists %v", subdirs)
	}
}
