package fs

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ucmfs/ucmfs/tiers"
	"github.com/ucmfs/ucmfs/tiers/rootfs/memfs"
)

// TestPassthroughFromMemfs: a block that only an nvme tier held in
// memory has (memfs: its file a memfd, no disk behind it) is read
// through the mount from that memfd: by FUSE passthrough where it is
// active (the kernel takes a memfd as a backing file, and the daemon
// serves no read), else by the daemon.
func TestPassthroughFromMemfs(t *testing.T) {
	requireFUSE(t)
	disk, err := memfs.New(filepath.Join(t.TempDir(), "nvme"), 256<<20)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { disk.Close() })
	st := newTestStackWith(t, tiers.MemConfig{Capacity: 64 << 20}, tiers.DirConfig{Kind: "nvme", Dir: disk.Dir(), OpenFS: disk.Open})
	m := newMountWith(t, st, Options{Passthrough: true})
	k, d := testBlock(testModel, 1, 1<<20)
	put(t, st, k, d)
	if err := st.FlushAll(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	if err := st.Evict(k); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(m.keyPath(k))
	if err != nil || !bytes.Equal(got, d) {
		t.Fatalf("read through the mount: %d bytes, %v", len(got), err)
	}
	if st.Stats().LowerHits == 0 {
		t.Error("the read was not served from the nvme tier")
	}
	if !m.srv.PassthroughActive() {
		t.Log("FUSE passthrough not active (kernel, privileges): the daemon served the read")
	} else if n := m.srv.state.daemonReads.Load(); n != 0 {
		t.Errorf("the daemon served %d reads: the memfd was not taken for passthrough", n)
	}
}
