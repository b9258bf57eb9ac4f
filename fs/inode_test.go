package fs

import (
	"testing"

	"github.com/ucmfs/ucmfs/hashdir"
)

// TestInodeLayout: numbers carry their kind tag, are stable across runs,
// and a sidecar never shares its block's number.
func TestInodeLayout(t *testing.T) {
	id := hashdir.ID{0xab, 1, 2, 3}
	names := map[inoTag]inoName{
		tagModel: {tag: tagModel, model: "m"},
		tagShard: {tag: tagShard, model: "m", shard: 0xab},
		tagBlock: {tag: tagBlock, model: "m", id: id},
		tagRepr:  {tag: tagRepr, model: "m", id: id},
	}
	seen := map[uint64]bool{}
	for tag, n := range names {
		ino := n.home()
		if tagOf(ino) != tag {
			t.Errorf("%+v: tag %d, want %d", n, tagOf(ino), tag)
		}
		if seen[ino] {
			t.Errorf("%+v: number %#x taken twice", n, ino)
		}
		seen[ino] = true
		if again := newInoTable().acquire(n); again != ino {
			t.Errorf("%+v: %#x in a new table, %#x before", n, again, ino)
		}
	}
	if sh := names[tagShard].home(); sh&0xff != 0xab {
		t.Errorf("shard number %#x does not end in its shard", sh)
	}
	if n := (inoName{tag: tagModel, model: "m"}).home(); n != names[tagModel].home() {
		t.Error("a model's number changes between calls")
	}
	if next(inoControlMax-1) != inoControlMax+1 || next(uint64(tagBlock)<<tagShift|lowMask) != uint64(tagBlock)<<tagShift {
		t.Error("probing leaves its tag or lands in the reserved range")
	}
}

// TestInodeCollision: two names with the same home number get different
// numbers; a released number is free again; release of a stale number is
// ignored.
func TestInodeCollision(t *testing.T) {
	tab := newInoTable()
	a := inoName{tag: tagBlock, model: "a", id: hashdir.ID{1}}
	b := inoName{tag: tagBlock, model: "b", id: hashdir.ID{2}}
	home := a.home()
	// Make b collide: pretend b's home is taken by a.
	tab.taken[b.home()] = tab.fingerprint(a)
	tab.moved[a] = b.home()
	ib := tab.acquire(b)
	if ib == b.home() || tagOf(ib) != tagBlock {
		t.Fatalf("colliding name got %#x (home %#x)", ib, b.home())
	}
	if tab.acquire(b) != ib {
		t.Fatal("a name's number changed while it is held")
	}
	tab.release(a, home) // stale: a holds another number
	if tab.held() != 2 {
		t.Fatalf("stale release freed a number: %d held", tab.held())
	}
	tab.release(b, ib)
	if tab.held() != 1 {
		t.Fatalf("%d numbers held after release, want 1", tab.held())
	}
	if tab.peek(b) != b.home() {
		t.Fatal("peek of a free name is not its home")
	}
	if tab.acquire(a) != b.home() || tab.peek(a) != b.home() {
		t.Fatal("the moved name lost its number")
	}
	tab.release(a, b.home())
	if tab.held() != 0 || len(tab.moved) != 0 {
		t.Fatalf("after releasing every name: %d held, %d moved", tab.held(), len(tab.moved))
	}
	if tab.acquire(a) != home {
		t.Fatal("a free name does not get its home number")
	}
}
