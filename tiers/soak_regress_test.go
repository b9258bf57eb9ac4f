package tiers

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/tiers/rootfs/crashfs"
	"golang.org/x/sys/unix"
)

// crashStack builds a stack over a directory tier on a crash disk.
func crashStack(t *testing.T, cfg StackConfig) (*Stack, *crashfs.Disk) {
	t.Helper()
	disk, dc := crashDir(t)
	return buildStack(t, cfg, MemConfig{Capacity: 8 << 20}, dc), disk
}

// crashDir makes a crash disk and the configuration of an nvme tier on
// it that fsyncs only what it is asked to.
func crashDir(t *testing.T) (*crashfs.Disk, DirConfig) {
	t.Helper()
	disk, err := crashfs.New(filepath.Join(t.TempDir(), "nvme"))
	if err != nil {
		t.Fatal(err)
	}
	no := false
	return disk, DirConfig{Kind: "nvme", Dir: disk.Dir(), SyncOnCommit: &no, OpenFS: disk.Open}
}

// putFile publishes data as a new version of the File k.
func putFile(s *Stack, k format.Key, data []byte, durable bool) error {
	p, err := s.CreateStaging(k)
	if err != nil {
		return err
	}
	if _, err := p.w.Write(data); err != nil {
		s.Abort(p)
		return err
	}
	p.SetReplace()
	_, err = s.Publish(p, durable)
	return err
}

// TestFailedDurableReplaceKeepsMemoryVersion (soak seed
// 1796637088064514123): a version of a file held in memory alone, not yet
// written back, and a durable publish of a new version over it whose
// fsync fails (EDQUOT): the name is what it was (the old version), as
// after a failed rename(2). It was gone: memory dropped the old version
// when the new one took its place, and no tier had its file to restore;
// and where a tier had it, the durable write-back renamed the new
// version over it before its fsync. The old version is written back
// first now (keepReplaced), and a new version fsynced before its rename.
func TestFailedDurableReplaceKeepsMemoryVersion(t *testing.T) {
	s, disk := crashStack(t, StackConfig{DirtyExpire: time.Hour})
	k := format.FileKey("files", "d1/f3.bin")
	if err := putFile(s, k, []byte("the old version, in memory only"), false); err != nil {
		t.Fatal(err)
	}
	disk.SetFault(func(op, rel string) error {
		if op == "fsync" {
			return &os.PathError{Op: op, Path: rel, Err: unix.EDQUOT}
		}
		return nil
	})
	if err := putFile(s, k, []byte("the new version, fsync fails"), true); !errors.Is(err, unix.EDQUOT) {
		t.Fatalf("durable publish: %v, want EDQUOT", err)
	}
	disk.SetFault(nil)
	if got := string(readAll(t, s, k)); got != "the old version, in memory only" {
		t.Fatalf("after the failed publish the name reads %q, want the old version", got)
	}
}

// TestDurablePutInNewDirectorySurvivesPowerCut (soak seed
// 1796637188973598236): a block published durable as the first of its
// model and shard is there after a power cut. It was gone: the file and
// its shard directory were fsynced, but not the directories holding the
// new names of the shard (<model>) and of the model (the tier's root),
// and a filesystem may forget a name its directory's fsync did not make
// durable.
func TestDurablePutInNewDirectorySurvivesPowerCut(t *testing.T) {
	bk, block := testBlock("ucmb", 1, 1000)
	for _, k := range []format.Key{bk, format.FileKey("files", "a/b/f.bin")} {
		disk, err := crashfs.New(filepath.Join(t.TempDir(), "nvme"))
		if err != nil {
			t.Fatal(err)
		}
		dc := DirConfig{Kind: "nvme", Dir: disk.Dir(), OpenFS: disk.Open}
		s := buildStack(t, StackConfig{DirtyExpire: time.Hour}, MemConfig{Capacity: 8 << 20}, dc)
		data := []byte("a file")
		if k.Kind == format.Block {
			data = block
		}
		if _, err := s.Put(k, data, true); err != nil {
			t.Fatal(err)
		}
		disk.PowerCut()
		s.Close(context.Background())
		if err := disk.Restore(); err != nil {
			t.Fatal(err)
		}
		s = buildStack(t, StackConfig{}, MemConfig{Capacity: 8 << 20}, dc)
		if got := readAll(t, s, k); string(got) != string(data) {
			t.Fatalf("%s after the power cut: %d bytes, want its %d", k, len(got), len(data))
		}
	}
}

// TestDurablePutAfterFailedDirSyncSurvivesPowerCut (soak seed
// 1796638164599371838): a durable publish whose fsync of a directory
// above its file failed (ENOSPC), then published durable again (or
// flushed), is there after a power cut, for each directory whose fsync
// fails. It was gone: the first attempt made the directories, and the
// second found them there and fsynced none of their parents, so their
// names were never durable (the directories are made once, their fsync
// failed once).
func TestDurablePutAfterFailedDirSyncSurvivesPowerCut(t *testing.T) {
	bk, block := testBlock("ucmb", 1, 1000)
	keys := map[format.Key][]byte{bk: block, format.FileKey("files", "f.bin"): []byte("a flat file"), format.FileKey("files", "a/b/f.bin"): []byte("a file in a tree")}
	for k, data := range keys {
		for n := int64(1); n <= 5; n++ {
			t.Run(fmt.Sprintf("%s/fsync%d", k, n), func(t *testing.T) { failedDirSyncThenDurable(t, k, data, n) })
		}
	}
}

// failedDirSyncThenDurable publishes k durable with the n-th fsync of a
// directory failing, again (or flushes it) if it failed, then cuts the
// power and reads it.
func failedDirSyncThenDurable(t *testing.T, k format.Key, data []byte, n int64) {
	disk, err := crashfs.New(filepath.Join(t.TempDir(), "nvme"))
	if err != nil {
		t.Fatal(err)
	}
	dc := DirConfig{Kind: "nvme", Dir: disk.Dir(), OpenFS: disk.Open}
	s := buildStack(t, StackConfig{DirtyExpire: time.Hour}, MemConfig{Capacity: 8 << 20}, dc)
	disk.FailAt(n, "fsync directory", unix.ENOSPC)
	if _, err := s.Put(k, data, true); err != nil {
		disk.SetFault(nil)
		_, err := s.Put(k, data, true)
		if errors.Is(err, ErrExist) {
			err = s.Flush(context.Background(), k)
		}
		if err != nil {
			t.Fatalf("%s: durable again after the %dth fsync of a directory failed: %v", k, n, err)
		}
	}
	disk.PowerCut()
	s.Close(context.Background())
	if err := disk.Restore(); err != nil {
		t.Fatal(err)
	}
	s = buildStack(t, StackConfig{}, MemConfig{Capacity: 8 << 20}, dc)
	if _, err := s.Stat(k); err != nil {
		t.Fatalf("%s after the power cut (the %dth fsync of a directory failed first): %v", k, n, err)
	}
	mustEqual(t, k.String(), readAll(t, s, k), data)
}
