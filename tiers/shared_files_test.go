package tiers

import (
	"bytes"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/tiers/rootfs"
	"github.com/ucmfs/ucmfs/tiers/rootfs/crashfs"
	"golang.org/x/sys/unix"
)

// TestSharedFileGoneThenNewVersion: host B holds version 0 of a File
// (in memory and in its index of the share); host A removes it and
// publishes version 1 (delete, then store: llm-d's and SGLang's stores
// skip a name that exists). B's check of the share meets the name
// between the two (gone), and before B's drop of its copies runs (it
// waits for the key's lock: an open of the name holds it), a lookup on B
// finds version 1 on the share. B then kept serving version 0 for good:
// the drop spared the copies because the share held the name again, and
// every later check found the share's file as B's index had it
// (integration TestSharedFSEngines/glusterfs/llm-d-fs: "host A's version
// 1 on every host: not after a minute"). A name that takes new versions
// and that the share lost is, when it comes back, another version.
func TestSharedFileGoneThenNewVersion(t *testing.T) {
	a, b, k := removedOnA(t, DirConfig{})
	mu := b.keyLock(k)
	mu.Lock() // B's drop of its copies waits
	share0 := dirTier(b, 0)
	if !eventually(10*testTTL, func() bool { b.revalidateShared(k); return !share0.Index().Has(k) }) {
		mu.Unlock()
		t.Fatal("B's check does not find the File gone")
	}
	if _, err := a.Put(k, v1, true); err != nil {
		mu.Unlock()
		t.Fatal(err)
	}
	if _, ok := share0.Lookup(k); !ok {
		mu.Unlock()
		t.Fatal("B's lookup does not find version 1 on the share")
	}
	mu.Unlock()
	readsVersion(t, b, k, v1)
}

// TestSharedFileEvictCheckSeesNewVersion: host B holds version 0 of a
// File, host A replaces it (same size, another mtime), and B's eviction
// asks whether it may evict the name (MayEvict: a stat of the share's
// file) before B's check of the File ran. The eviction took the share's
// mtime for another host's use of B's version and wrote it into the
// index, and every later check found the share's file as the index had
// it: B served version 0 for good. It now leaves that to the check, which
// finds the new version.
func TestSharedFileEvictCheckSeesNewVersion(t *testing.T) {
	a, b, k := removedOnA(t, DirConfig{})
	if _, err := a.Put(k, v1, true); err != nil {
		t.Fatal(err)
	}
	if dirTier(b, 0).MayEvict(k) {
		t.Fatal("B may evict a File published just now")
	}
	readsVersion(t, b, k, v1)
}

// v0, v1 and v2 are three versions of one File, of one size.
var v0, v1, v2 = bytes.Repeat([]byte{'0'}, 4096), bytes.Repeat([]byte{'1'}, 4096), bytes.Repeat([]byte{'2'}, 4096)

// removedOnA makes hosts A and B (B's shared tier as bc says) over one
// share; A publishes v0 of a File, B reads it (in B's memory and its index
// of the share), and A removes it. It returns A, B and the File's key.
func removedOnA(t *testing.T, bc DirConfig) (a, b *Stack, k format.Key) {
	t.Helper()
	share := t.TempDir()
	a = sharedStack(t, 8<<20, share, testTTL, DirConfig{})
	b = sharedStack(t, 8<<20, share, testTTL, bc)
	if err := a.MarkTree("eng"); err != nil {
		t.Fatal(err)
	}
	k = format.FileKey("eng", "x/f.bin")
	if _, err := a.Put(k, v0, true); err != nil {
		t.Fatal(err)
	}
	mustEqual(t, "B's read of version 0", readAll(t, b, k), v0)
	if err := a.Remove(k); err != nil {
		t.Fatal(err)
	}
	return a, b, k
}

// readsVersion waits until s, looking k up and reading it as the mount
// does (Stat, then the read), reads want (failing after 5 s).
func readsVersion(t *testing.T, s *Stack, k format.Key, want []byte) {
	t.Helper()
	var got []byte
	if !eventually(5*time.Second, func() bool {
		_, _ = s.Stat(k)
		got = readAll(t, s, k)
		return bytes.Equal(got, want)
	}) {
		t.Fatalf("reads %q..., not %q...", got[:8], want[:8])
	}
}

// TestSharedFileTouchSeesNewVersion: as TestSharedFileEvictCheckSeesNewVersion,
// with B's use of the name (Touch, which moves the share's file's mtime
// once per touchEvery) in place of the eviction's check: the touch
// stamped A's version and wrote its new mtime into B's index, and B
// served version 0 for good.
func TestSharedFileTouchSeesNewVersion(t *testing.T) {
	a, b, k := removedOnA(t, DirConfig{KeepRecent: time.Millisecond})
	if _, err := a.Put(k, v1, true); err != nil {
		t.Fatal(err)
	}
	dirTier(b, 0).Touch(k)
	readsVersion(t, b, k, v1)
}

// TestSharedOwedFileRacesForeignVersion: host B publishes a File on its
// nvme (O_DIRECT, as vLLM's and LMCache's stores do), owed to the share;
// another host's version of the name lands on the share between B's
// check of the name and B's copy's commit (the check saw nothing). The
// commit met a file it did not know (ErrExist), which was taken for "on
// the share already": B's index of the share never knew the name, no
// check of it ever ran, and once the other host replaced the name, B
// went on serving its own old version from its nvme for good
// (TestSharedFSEngines: vLLM's and LMCache's replacements, now and then).
func TestSharedOwedFileRacesForeignVersion(t *testing.T) {
	share, nvme := t.TempDir(), t.TempDir()
	k := format.FileKey("eng", "x/f.bin")
	foreign := filepath.Join(share, k.Path())
	var armed, landed atomic.Bool
	wrap := hookedFS(func(op, rel string) error {
		if op != "stat" || rel != k.Path() || !armed.Load() || !landed.CompareAndSwap(false, true) {
			return nil
		}
		// The other host's version lands, older than B's: B's is the
		// last published and replaces it.
		if err := os.MkdirAll(filepath.Dir(foreign), 0o755); err != nil {
			t.Error(err)
		}
		if err := os.WriteFile(foreign, v1, 0o644); err != nil {
			t.Error(err)
		}
		old := time.Now().Add(-time.Minute)
		if err := os.Chtimes(foreign, old, old); err != nil {
			t.Error(err)
		}
		return &os.PathError{Op: "stat", Path: rel, Err: unix.ENOENT}
	})
	b := buildStack(t, StackConfig{}, MemConfig{Capacity: 64 << 20},
		DirConfig{Kind: "nvme", Dir: nvme},
		DirConfig{Kind: "nfs", Dir: share, Revalidate: testTTL, Logger: testLogger(), OpenFS: wrap})
	if err := b.MarkTree("eng"); err != nil {
		t.Fatal(err)
	}
	p, err := b.CreateOnDisk(format.FileKey("eng", "x/f.bin_1.tmp"))
	if err != nil {
		t.Fatal(err)
	}
	writeDirect(t, p, v0)
	p.Rekey(k)
	p.SetReplace()
	if _, err := b.Publish(p, false); err != nil {
		t.Fatal(err)
	}
	armed.Store(true) // the copy to the share runs within a second
	if !eventually(10*time.Second, func() bool { return len(b.dirs[1].Owed(nil)) == 0 }) {
		t.Fatal("the File is still owed to the share")
	}
	if !landed.Load() {
		t.Fatal("the other host's version never landed")
	}
	// The other host replaces the name (tmp + rename): B finds its version.
	replaceOnShare(t, foreign, v2)
	readsVersion(t, b, k, v2)
}

// TestSharedWriteBackMeetsUnseenVersion: host B writes a File back from
// memory, and the share holds another host's version at its name, which
// a stat on B's client does not find yet (ENOENT: GlusterFS answers so
// for a moment). The commit met the file (ErrExist) and, the supersede
// finding nothing to supersede, the write-back took it for "there
// already": B's version stayed in its memory, the share's unknown to its
// index, and after the other host replaced the name B went on serving
// its own for good (TestSharedFSEngines/glusterfs/llm-d-fs). B now takes
// the share's version.
func TestSharedWriteBackMeetsUnseenVersion(t *testing.T) {
	share := t.TempDir()
	k := format.FileKey("eng", "x/f.bin")
	foreign := filepath.Join(share, k.Path())
	var armed, unseen atomic.Bool
	wrap := hookedFS(func(op, rel string) error {
		switch {
		case (op == "link" || op == "rename") && armed.Load() && !unseen.Load():
			// The other host's version lands just before B's publish.
			if err := os.MkdirAll(filepath.Dir(foreign), 0o755); err != nil {
				t.Error(err)
			}
			if err := os.WriteFile(foreign, v1, 0o644); err != nil {
				t.Error(err)
			}
			unseen.Store(true)
		case op == "stat" && rel == k.Path() && unseen.Load():
			return &os.PathError{Op: "stat", Path: rel, Err: unix.ENOENT}
		}
		return nil
	})
	b := sharedStack(t, 8<<20, share, testTTL, DirConfig{OpenFS: wrap})
	if err := b.MarkTree("eng"); err != nil {
		t.Fatal(err)
	}
	armed.Store(true)
	if _, err := b.Put(k, v0, false); err != nil {
		t.Fatal(err)
	}
	if !eventually(10*time.Second, func() bool { return unseen.Load() && !b.mem.Dirty(k) }) {
		t.Fatal("B's version is not written back")
	}
	armed.Store(false)
	unseen.Store(false)
	replaceOnShare(t, foreign, v2)
	readsVersion(t, b, k, v2)
}

// hookedFS is a DirConfig.OpenFS: the tier's Root with before run ahead
// of each operation (crashfs.Wrap).
func hookedFS(before func(op, rel string) error) func(string, uint32) (rootfs.FS, error) {
	return func(d string, perm uint32) (rootfs.FS, error) {
		r, err := rootfs.Open(d, os.FileMode(perm))
		if err != nil {
			return nil, err
		}
		return crashfs.Wrap(r, before), nil
	}
}

// replaceOnShare replaces the file at path with data as another host
// does (tmp + rename).
func replaceOnShare(t *testing.T, path string, data []byte) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}
