package fs

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/tiers"
	"github.com/ucmfs/ucmfs/vfs"
)

// tierFds counts this process's descriptors of k's tier files (the mount
// runs in the test process): the descriptors the mount holds for k.
func tierFds(t *testing.T, m *testMount, k format.Key) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err == nil && strings.Contains(target, k.ID.String()) && !strings.HasPrefix(target, m.mnt) {
			n++
		}
	}
	return n
}

// reread reads path and fails the test unless it holds want.
func reread(t *testing.T, path string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: read %d bytes, not the block's %d", path, len(got), len(want))
	}
}

// waitFds waits up to within for k's descriptors to number want.
func waitFds(t *testing.T, m *testMount, k format.Key, want int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for tierFds(t, m, k) != want {
		if time.Now().After(deadline) {
			t.Fatalf("%d descriptors of %s after %v, want %d", tierFds(t, m, k), k, within, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestKeptDescriptor: the mount keeps one descriptor of a block after its
// last close, however many opens reuse it; a block removed and published
// again under the same name reads its new bytes; an eviction from memory
// closes the kept descriptor at the next sweep (not after vfs.IdleKeep) and
// the block then reads the same from the lower tier; vfs.IdleKeep after the
// last close nothing is kept.
func TestKeptDescriptor(t *testing.T) {
	modes(t, func(t *testing.T, m *testMount) {
		k, d := testBlock(testModel, 91001, 256<<10) // an id no other test uses
		path := m.keyPath(k)
		os.Mkdir(m.path(testModel), 0o755)
		if err := writeFile(path, d); err != nil {
			t.Fatal(err)
		}
		if err := m.st.Flush(context.Background(), k); err != nil {
			t.Fatal(err) // no write-back holds the file while the test counts
		}
		for range 3 {
			reread(t, path, d)
		}
		if n := tierFds(t, m, k); n != 1 {
			t.Fatalf("%d descriptors kept after three reads, want 1", n)
		}
		// The kernel sends a close's RELEASE after close returns: the
		// replacement below is a new open only once the daemon has taken
		// the last one (a reader still holding the old file shares its
		// node, and reads the old bytes: docs/semantics.md).
		waitKept(t, m, 1)

		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		d2 := otherBytes(k, len(d)-format.HeaderSize)
		if err := writeFile(path, d2); err != nil {
			t.Fatal(err)
		}
		reread(t, path, d2)

		if err := m.st.Flush(context.Background(), k); err != nil {
			t.Fatal(err)
		}
		if err := m.st.Evict(k); err != nil {
			t.Fatal(err)
		}
		waitFds(t, m, k, 0, vfs.IdleKeep/2)
		reread(t, path, d2) // and its promotion may run meanwhile
		waitFds(t, m, k, 0, vfs.IdleKeep+5*vfs.IdleSweep)
	})
}

// waitKept waits until the mount keeps n descriptors after their last
// close (every RELEASE taken).
func waitKept(t *testing.T, m *testMount, n int) {
	t.Helper()
	c := m.srv.state.opens
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		got := c.Len()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d descriptors kept, want %d", got, n)
		}
	}
}

// otherBytes is a valid block of k's id with a payload of n bytes other
// than testBlock's.
func otherBytes(k format.Key, n int) []byte {
	data := bytes.Repeat([]byte{0x5a}, n)
	h := format.BlockHeader{ID: k.ID, NumLayers: 2, BlockSize: 4, Dtype: format.BFloat16}
	return format.NewBlock(h, data)
}

// TestKeptDescriptorUnmount: the unmount closes the kept descriptors.
func TestKeptDescriptorUnmount(t *testing.T) {
	m := newMount(t, Options{Passthrough: true})
	k, d := testBlock(testModel, 91002, 64<<10)
	os.Mkdir(m.path(testModel), 0o755)
	if err := writeFile(m.keyPath(k), d); err != nil {
		t.Fatal(err)
	}
	if err := m.st.Flush(context.Background(), k); err != nil {
		t.Fatal(err)
	}
	reread(t, m.keyPath(k), d)
	// The reread's RELEASE comes after its close returned: until then its
	// descriptor is in use, not kept, and a connection that ends first
	// never sees it.
	waitKept(t, m, 1)
	if err := m.srv.Unmount(); err != nil {
		t.Fatal(err)
	}
	if n := tierFds(t, m, k); n != 0 {
		t.Fatalf("%d descriptors of %s left after the unmount", n, k)
	}
}

// TestKeptDescriptorBound: the memory-tier files kept after their last
// close hold at most vfs.IdleMaxBytes.
func TestKeptDescriptorBound(t *testing.T) {
	requireFUSE(t)
	st := newTestStackWith(t, tiers.MemConfig{Capacity: 256 << 20}, tiers.DirConfig{Kind: "nvme"})
	m := newMountWith(t, st, Options{Passthrough: true})
	os.Mkdir(m.path(testModel), 0o755)
	const size = 1 << 20
	var keys []format.Key
	for i := range vfs.IdleMaxBytes/size + 16 {
		k, d := testBlock(testModel, 92000+i, size-format.HeaderSize)
		if err := writeFile(m.keyPath(k), d); err != nil {
			t.Fatal(err)
		}
		if err := m.st.Flush(context.Background(), k); err != nil {
			t.Fatal(err)
		}
		reread(t, m.keyPath(k), d)
		keys = append(keys, k)
	}
	// The last reread's RELEASE comes after its close returns: until it
	// is answered, that descriptor is in use, not kept.
	kept := 0
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		kept = 0
		for _, k := range keys {
			kept += tierFds(t, m, k)
		}
		if kept*size <= vfs.IdleMaxBytes {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("%d memory-tier files of %d bytes kept, more than %d bytes", kept, size, vfs.IdleMaxBytes)
		}
	}
	if kept == 0 {
		t.Fatal("no descriptor kept")
	}
}
