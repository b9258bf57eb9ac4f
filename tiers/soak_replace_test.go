package tiers

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ucmfs/ucmfs/format"
	"golang.org/x/sys/unix"
)

// A failed publish of a new version of a name leaves the name with a
// version: the old one, or, where the new one was renamed over the old
// one's file before the fsync of its directory failed, the new one. It
// never leaves none. The siblings of TestFailedDurableReplaceKeepsMemoryVersion.

// TestFailedDirSyncOfReplaceKeepsNewVersion: a durable publish of a new
// version over one on the tier, whose directory's fsync fails after the
// rename over the old file: the publish fails, and the name holds the
// new version. It had none: the failed publish took the new version out
// of every tier, and the rename had already replaced the old one's file.
func TestFailedDirSyncOfReplaceKeepsNewVersion(t *testing.T) {
	s, disk := crashStack(t, StackConfig{DirtyExpire: time.Hour})
	k := format.FileKey("files", "d/f.bin")
	if err := putFile(s, k, []byte("the old version, durable"), true); err != nil {
		t.Fatal(err)
	}
	disk.SetFault(func(op, rel string) error {
		if op == "fsync directory" && rel == "files/d" {
			return &os.PathError{Op: op, Path: rel, Err: unix.ENOSPC}
		}
		return nil
	})
	if err := putFile(s, k, []byte("the new version"), true); !errors.Is(err, unix.ENOSPC) {
		t.Fatalf("durable publish: %v, want ENOSPC", err)
	}
	disk.SetFault(nil)
	if got := string(readAll(t, s, k)); got != "the new version" {
		t.Fatalf("after the failed publish the name reads %q, want the new version (its file replaced the old one's)", got)
	}
}

// TestFailedDirectReplaceKeepsMemoryVersion: a new version too large for
// memory goes straight to the directory tier, over a version held in
// memory alone; that write fails (ENOSPC at every rename): the name is
// what it was. It was gone: memory dropped the old version at the
// supersede, and no tier had its file.
func TestFailedDirectReplaceKeepsMemoryVersion(t *testing.T) {
	disk, dc := crashDir(t)
	s := buildStack(t, StackConfig{DirtyExpire: time.Hour, RoomWait: time.Millisecond}, MemConfig{Capacity: 64 << 10}, dc)
	k := format.FileKey("files", "d/f.bin")
	old := []byte("the old version, in memory only")
	if err := putFile(s, k, old, false); err != nil {
		t.Fatal(err)
	}
	disk.SetFault(func(op, rel string) error {
		if op == "rename" {
			return &os.PathError{Op: op, Path: rel, Err: unix.ENOSPC}
		}
		return nil
	})
	if err := putFile(s, k, bytes.Repeat([]byte("n"), 128<<10), false); err == nil {
		t.Fatal("the direct write over a failing rename succeeded")
	}
	disk.SetFault(nil)
	if got := readAll(t, s, k); !bytes.Equal(got, old) {
		t.Fatalf("after the failed publish the name reads %d bytes, want the old version", len(got))
	}
}

// TestDurableReplaceKeepsVersionPublishedDuringKeep (soak seed
// 1796661469420348906): a durable publish of a new version over one held
// in memory alone writes that one back first (keepReplaced); a version
// published while that write-back copies (another writer's) makes the
// write-back drop its copy and report success. The durable publish then
// superseded a version no tier had, its own write-back failed (EIO), and
// the name read nothing where the version published meanwhile had been
// acknowledged. keepReplaced writes back until memory holds no version of
// the name alone.
func TestDurableReplaceKeepsVersionPublishedDuringKeep(t *testing.T) {
	s, disk := crashStack(t, StackConfig{DirtyExpire: time.Hour})
	k := format.FileKey("files", "d1/f3.bin")
	if err := putFile(s, k, []byte("v0, in memory only"), false); err != nil {
		t.Fatal(err)
	}
	held, release := make(chan struct{}), make(chan struct{})
	var temps atomic.Int64
	disk.SetFault(func(op, rel string) error {
		if op != "open" || !strings.Contains(rel, "/.tmp-") {
			return nil
		}
		if temps.Add(1) == 1 {
			close(held) // the write-back of v0, copying
			<-release
			return nil
		}
		return &os.PathError{Op: op, Path: rel, Err: unix.EIO} // any later write-back
	})
	done := make(chan error, 1)
	go func() { done <- putFile(s, k, []byte("v2, durable"), true) }()
	<-held
	v1 := []byte("v1, published while v0 is written back")
	if err := putFile(s, k, v1, false); err != nil {
		t.Fatal(err)
	}
	close(release)
	err := <-done
	disk.SetFault(nil)
	if err == nil {
		t.Fatal("the durable publish succeeded though every write-back after the first failed")
	}
	h, oerr := s.Open(k)
	if oerr != nil {
		t.Fatalf("after the failed durable publish (%v): open: %v, want v1 (acknowledged)", err, oerr)
	}
	defer h.File.Close()
	got, _ := io.ReadAll(h.File)
	if !bytes.Equal(got, v1) {
		t.Fatalf("after the failed durable publish (%v): %q, want v1", err, got)
	}
}
