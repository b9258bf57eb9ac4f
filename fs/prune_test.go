package fs

import (
	"bytes"
	"os"
	"testing"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/ucmfs/ucmfs/tiers"
)

// TestKernelNodesBounded: after a walk of more published files than
// Options.KernelNodes, the kernel forgets the oldest (the daemon's node
// table shrinks back to about the bound), and a pruned block still reads.
func TestKernelNodesBounded(t *testing.T) {
	st := newTestStackWith(t, tiers.MemConfig{Capacity: 64 << 20}, tiers.DirConfig{Kind: "nvme"})
	const n, bound = 3000, 200
	var keys []tiers.Key
	var datas [][]byte
	for i := 0; i < n; i++ {
		k, data := testBlock("m", i, 128)
		put(t, st, k, data)
		keys, datas = append(keys, k), append(datas, data)
	}
	m := newMountWith(t, st, Options{KernelNodes: bound})
	for _, k := range keys {
		if _, err := os.Stat(m.keyPath(k)); err != nil {
			t.Fatal(err)
		}
	}
	// Shards and models hold numbers too: 256 shards, a model, the root's.
	const most = bound + pruneBatch + 300
	deadline := time.Now().Add(10 * time.Second)
	held := m.srv.state.inos.held()
	for held > most && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		held = m.srv.state.inos.held()
	}
	if held > most {
		t.Fatalf("after stats of %d blocks the daemon holds %d numbers, want at most %d", n, held, most)
	}
	got, err := os.ReadFile(m.keyPath(keys[0]))
	if err != nil || !bytes.Equal(got, datas[0]) {
		t.Fatalf("the first (pruned) block: %v", err)
	}
}

// TestPrunerRing: the FIFO hands back the oldest nodes beyond the bound,
// in order, and drops the oldest untold when the sender lags.
func TestPrunerRing(t *testing.T) {
	p := &pruner{limit: 2, fifo: make([]*gofs.Inode, 4), running: true} // running: no goroutine
	nodes := make([]gofs.Inode, 6)
	for i := range nodes {
		p.add(&nodes[i])
	}
	batch := p.take() // 6 added to a ring of 4: the first two left untold
	if len(batch) != 2 || batch[0] != &nodes[2] || batch[1] != &nodes[3] {
		t.Fatalf("batch %v", batch)
	}
	if p.take() != nil || p.running {
		t.Fatal("under the bound: nothing more, and the sender stops")
	}
}
