package light

import (
	"testing"

	gofs "github.com/hanwen/go-fuse/v2/fs"
)

// TestPrunerRing: the FIFO hands back the oldest nodes beyond the bound,
// in order, and drops the oldest untold when the sender lags.
func TestPrunerRing(t *testing.T) {
	p := &Pruner{limit: 2, fifo: make([]kernelNode, 4), running: true} // running: no goroutine
	nodes := make([]gofs.Inode, 5)
	for i := range nodes {
		p.Add(&nodes[i])
	}
	p.AddLight(lightBase + 7)
	batch := p.take() // 6 added to a ring of 4: the first two left untold
	if len(batch) != 2 || batch[0].n != &nodes[2] || batch[1].n != &nodes[3] {
		t.Fatalf("batch %v", batch)
	}
	if p.take() != nil || p.running {
		t.Fatal("under the bound: nothing more, and the sender stops")
	}
}
