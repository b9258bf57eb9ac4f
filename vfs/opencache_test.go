package vfs

import (
	"testing"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/store"
)

// keptNode is a node whose descriptor an OpenCache keeps, as Opened is.
type keptNode struct{ keep Keep }

func (*keptNode) CloseKept(uint64) {}

// TestOpenCacheKeepAllocs: keeping a descriptor at its last close and
// taking it back at the next open allocate nothing (a block's every
// open+close does both), and past idleMaxFiles the least recently closed
// are handed back to be closed, oldest first.
func TestOpenCacheKeepAllocs(t *testing.T) {
	c := NewOpenCache(nil)
	c.running = true // no sweep: it would ask the store, and the test holds the list
	k := format.Key{Model: "m"}
	var n keptNode
	cycle := func() {
		if ok, over := c.Keep(&n, &n.keep, k, store.Token{}, 1, 0); !ok || len(over) > 0 {
			t.Fatalf("keep: %v, %d over", ok, len(over))
		}
		c.Unkeep(&n.keep)
	}
	if a := testing.AllocsPerRun(1000, cycle); a > 0 {
		t.Errorf("a keep and its unkeep allocate %.1f times, want 0", a)
	}
	nodes := make([]keptNode, idleMaxFiles+2)
	var over []IdleRef
	for i := range nodes {
		_, o := c.Keep(&nodes[i], &nodes[i].keep, k, store.Token{}, 1, 0)
		over = append(over, o...)
	}
	if len(over) != 2 || over[0].n != &nodes[0] || over[1].n != &nodes[1] || c.Len() != idleMaxFiles {
		t.Fatalf("over the bound: %d handed back, %d kept; want nodes 0 and 1, %d kept", len(over), c.Len(), idleMaxFiles)
	}
	if nodes[0].keep.listed || !nodes[2].keep.listed || !nodes[2].keep.Is(nodes[2].keep.seq) {
		t.Fatal("the list does not hold what it kept")
	}
	c.CloseAll()
	if c.Len() != 0 || nodes[5].keep.listed {
		t.Fatalf("after CloseAll: %d kept", c.Len())
	}
}
