package fs

import (
	"bytes"
	"os"
	"testing"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/ucmfs/ucmfs/hashdir"
	"github.com/ucmfs/ucmfs/tiers"
)

// TestKernelNodesBounded: after a walk of more published files than
// Options.KernelNodes, the kernel forgets the oldest (the daemon's light
// nodes and node numbers shrink back to about the bound), and a pruned
// block still reads.
func TestKernelNodesBounded(t *testing.T) {
	st := newTestStackWith(t, tiers.MemConfig{Capacity: 64 << 20}, tiers.DirConfig{Kind: "nvme"})
	const n, bound = 3000, 200
	var keys []hashdir.Key
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
	held, light := m.srv.state.inos.held(), m.lightCount()
	for (held > most || light > bound+pruneBatch) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		held, light = m.srv.state.inos.held(), m.lightCount()
	}
	if held > most || light > bound+pruneBatch {
		t.Fatalf("after stats of %d blocks the daemon holds %d numbers and %d light nodes, want at most %d and %d",
			n, held, light, most, bound+pruneBatch)
	}
	got, err := os.ReadFile(m.keyPath(keys[0]))
	if err != nil || !bytes.Equal(got, datas[0]) {
		t.Fatalf("the first (pruned) block: %v", err)
	}
}

// TestPrunerRing: the FIFO hands back the oldest nodes beyond the bound,
// in order, and drops the oldest untold when the sender lags.
func TestPrunerRing(t *testing.T) {
	p := &pruner{limit: 2, fifo: make([]kernelNode, 4), running: true} // running: no goroutine
	nodes := make([]gofs.Inode, 5)
	for i := range nodes {
		p.add(&nodes[i])
	}
	p.addLight(lightBase + 7)
	batch := p.take() // 6 added to a ring of 4: the first two left untold
	if len(batch) != 2 || batch[0].n != &nodes[2] || batch[1].n != &nodes[3] {
		t.Fatalf("batch %v", batch)
	}
	if p.take() != nil || p.running {
		t.Fatal("under the bound: nothing more, and the sender stops")
	}
}
