package fs

import (
	"testing"

	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/fs/light"
)

// TestLightLookupMissAllocs: the light layer answers a LOOKUP of a block
// no tier holds (the kernel's first stat of a missing name) without
// allocating; every allocation of a request is the collector's work
// later, on the path of some other request.
func TestLightLookupMissAllocs(t *testing.T) {
	m := newMount(t, Options{})
	k, d := testBlock(testModel, 1, 64)
	put(t, m.st, k, d) // the model exists
	h := lightHost{m.srv.state}
	var miss format.ID
	miss[0], miss[15] = k.ID[0], ^k.ID[15]
	ref := light.Ref{Model: testModel, Shard: k.ID[0], Dir: k.ID.Shard(), Width: -1}
	name := format.Key{Model: testModel, ID: miss, Kind: format.Block}.FileName()
	var out fuse.EntryOut
	lookup := func() {
		if _, outcome, _ := h.Lookup(ref, name, &out); outcome != light.Answered {
			t.Fatalf("lookup of %s: outcome %v, want Answered", name, outcome)
		}
	}
	if n := testing.AllocsPerRun(1000, lookup); n > 0 {
		t.Errorf("a LOOKUP miss allocates %.1f times, want 0", n)
	}
}
