package light

import (
	"testing"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// countingBridge answers GETATTR with a fixed number and counts the
// calls; every other request is the default's (ENOSYS).
type countingBridge struct {
	fuse.RawFileSystem
	ino      uint64
	getattrs int
}

func (b *countingBridge) GetAttr(cancel <-chan struct{}, in *fuse.GetAttrIn, out *fuse.AttrOut) fuse.Status {
	b.getattrs++
	out.Ino = b.ino
	return fuse.OK
}

// shardTag takes the numbers with bit 62 set for shard directories.
type shardTag struct{ Host }

func (shardTag) ShardIno(ino uint64) bool { return ino&(1<<62) != 0 }

// TestNotShardRemembered: a node id found not to be a shard directory is
// asked about once, not at every lookup in it; a colliding id only takes
// its slot.
func TestNotShardRemembered(t *testing.T) {
	b := &countingBridge{RawFileSystem: fuse.NewDefaultRawFileSystem(), ino: 7}
	w := NewLayer(b, shardTag{}, NewTable(nil), NewRegistry())
	for range 3 {
		if _, ok := w.shardOf(nil, 42, fuse.Caller{}); ok {
			t.Fatal("a directory numbered 7 taken for a shard")
		}
	}
	if b.getattrs != 1 {
		t.Fatalf("%d GETATTRs through the bridge for three lookups in one directory, want 1", b.getattrs)
	}
	w.shardOf(nil, 42+notShardSlots, fuse.Caller{}) // same slot
	w.shardOf(nil, 42, fuse.Caller{})
	if b.getattrs != 3 {
		t.Fatalf("%d GETATTRs after a colliding id, want 3", b.getattrs)
	}
}
