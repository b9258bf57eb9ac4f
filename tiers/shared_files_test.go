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
	share := t.TempDir()
	a := sharedStack(t, 8<<20, share, testTTL, DirConfig{})
	b := sharedStack(t, 8<<20, share, testTTL, DirConfig{})
	if err := a.MarkTree("eng"); err != nil {
		t.Fatal(err)
	}
	k := format.FileKey("eng", "x/f.bin")
	v0, v1 := bytes.Repeat([]byte{'0'}, 4096), bytes.Repeat([]byte{'1'}, 4096)
	if _, err := a.Put(k, v0, true); err != nil {
		t.Fatal(err)
	}
	mustEqual(t, "B's read of version 0", readAll(t, b, k), v0)
	if err := a.Remove(k); err != nil {
		t.Fatal(err)
	}
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
	var got []byte
	if !eventually(5*time.Second, func() bool { got = readAll(t, b, k); return bytes.Equal(got, v1) }) {
		t.Fatalf("B reads %q..., not version 1", got[:8])
	}
}
