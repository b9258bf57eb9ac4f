package tiers

import (
	"bytes"
	"testing"
	"time"

	"github.com/ucmfs/ucmfs/format"
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

// v0 and v1 are two versions of one File, of one size.
var v0, v1 = bytes.Repeat([]byte{'0'}, 4096), bytes.Repeat([]byte{'1'}, 4096)

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
