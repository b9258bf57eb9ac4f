package fs

import (
	"bytes"
	"os"
	"testing"
	"time"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/fs/light"
	"github.com/ucmfs/ucmfs/tiers"
)

// TestKernelNodesBounded: after a walk of more published files than
// Options.KernelNodes, the kernel forgets the oldest (the daemon's light
// nodes and node numbers shrink back to about the bound), and a pruned
// block still reads.
func TestKernelNodesBounded(t *testing.T) {
	st := newTestStackWith(t, tiers.MemConfig{Capacity: 64 << 20}, tiers.DirConfig{Kind: "nvme"})
	const n, bound = 3000, 200
	var keys []format.Key
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
	const most = bound + light.PruneBatch + 300
	deadline := time.Now().Add(10 * time.Second)
	held, lights := m.srv.state.inos.Held(), m.lightCount()
	for (held > most || lights > bound+light.PruneBatch) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		held, lights = m.srv.state.inos.Held(), m.lightCount()
	}
	if held > most || lights > bound+light.PruneBatch {
		t.Fatalf("after stats of %d blocks the daemon holds %d numbers and %d light nodes, want at most %d and %d",
			n, held, lights, most, bound+light.PruneBatch)
	}
	got, err := os.ReadFile(m.keyPath(keys[0]))
	if err != nil || !bytes.Equal(got, datas[0]) {
		t.Fatalf("the first (pruned) block: %v", err)
	}
}
