package ino

import (
	"testing"

	"github.com/ucmfs/ucmfs/format"
)

// TestInodeLayout: numbers carry their kind tag, are stable across runs,
// and a sidecar never shares its block's number.
func TestInodeLayout(t *testing.T) {
	id := format.ID{0xab, 1, 2, 3}
	names := map[Tag]Name{
		Model: {Tag: Model, Model: "m"},
		Shard: {Tag: Shard, Model: "m", Shard: 0xab},
		Block: {Tag: Block, Model: "m", ID: id},
		Repr:  {Tag: Repr, Model: "m", ID: id},
	}
	seen := map[uint64]bool{}
	for tag, n := range names {
		ino := n.home()
		if TagOf(ino) != tag {
			t.Errorf("%+v: tag %d, want %d", n, TagOf(ino), tag)
		}
		if seen[ino] {
			t.Errorf("%+v: number %#x taken twice", n, ino)
		}
		seen[ino] = true
		if again := NewTable().Acquire(n); again != ino {
			t.Errorf("%+v: %#x in a new table, %#x before", n, again, ino)
		}
	}
	if sh := names[Shard].home(); sh&0xff != 0xab {
		t.Errorf("shard number %#x does not end in its shard", sh)
	}
	if n := (Name{Tag: Model, Model: "m"}).home(); n != names[Model].home() {
		t.Error("a model's number changes between calls")
	}
	if next(Reserved-1) != Reserved+1 || next(uint64(Block)<<Shift|LowMask) != uint64(Block)<<Shift {
		t.Error("probing leaves its tag or lands in the reserved range")
	}
}

// TestInodeCollision: two names with the same home number get different
// numbers; a released number is free again; release of a stale number is
// ignored.
func TestInodeCollision(t *testing.T) {
	tab := NewTable()
	a := Name{Tag: Block, Model: "a", ID: format.ID{1}}
	b := Name{Tag: Block, Model: "b", ID: format.ID{2}}
	home := a.home()
	// Make b collide: pretend b's home is taken by a.
	tab.taken[b.home()] = tab.fingerprint(a)
	tab.moved[a] = b.home()
	ib := tab.Acquire(b)
	if ib == b.home() || TagOf(ib) != Block {
		t.Fatalf("colliding name got %#x (home %#x)", ib, b.home())
	}
	if tab.Acquire(b) != ib {
		t.Fatal("a name's number changed while it is held")
	}
	tab.Release(a, home) // stale: a holds another number
	if tab.Held() != 2 {
		t.Fatalf("stale release freed a number: %d held", tab.Held())
	}
	tab.Release(b, ib)
	if tab.Held() != 1 {
		t.Fatalf("%d numbers held after release, want 1", tab.Held())
	}
	if tab.Peek(b) != b.home() {
		t.Fatal("peek of a free name is not its home")
	}
	if tab.Acquire(a) != b.home() || tab.Peek(a) != b.home() {
		t.Fatal("the moved name lost its number")
	}
	tab.Release(a, b.home())
	if tab.Held() != 0 || len(tab.moved) != 0 {
		t.Fatalf("after releasing every name: %d held, %d moved", tab.Held(), len(tab.moved))
	}
	if tab.Acquire(a) != home {
		t.Fatal("a free name does not get its home number")
	}
}

// TestHolds: a name holds a number from Acquire to Release, at home or
// moved; another name at its home is not it.
func TestHolds(t *testing.T) {
	tab := NewTable()
	k := format.FileKey("m", "a.bin")
	v0, v1 := FileVersion(k, 0), FileVersion(k, 1)
	if tab.Holds(v0) {
		t.Fatal("holds before Acquire")
	}
	n0, n1 := tab.Acquire(v0), tab.Acquire(v1)
	if !tab.Holds(v0) || !tab.Holds(v1) {
		t.Fatal("not held after Acquire")
	}
	tab.Release(v0, n0)
	if tab.Holds(v0) || !tab.Holds(v1) {
		t.Fatal("v0 held after its Release, or v1 not")
	}
	tab.Release(v1, n1)
	if tab.Holds(v1) {
		t.Fatal("v1 held after its Release")
	}
}

// TestRename: a number given to a new name by Rename is the new name's
// (Acquire returns it, Release under the new name frees it) and no longer
// the old name's, which gets another; a name that held a number of its
// own keeps it held until released, but is looked up as the moved one.
func TestRename(t *testing.T) {
	tab := NewTable()
	a, b, c := DirName("m", "a"), DirName("m", "b"), DirName("m", "c")
	n := tab.Acquire(a)
	tab.Rename(a, b, n)
	if got := tab.Acquire(b); got != n {
		t.Errorf("Acquire of the new name: %d, want %d", got, n)
	}
	if got := tab.Acquire(a); got == n {
		t.Errorf("Acquire of the old name after the rename: %d, the moved number", got)
	}
	tab.Release(a, n) // not a's any more: nothing
	if !tab.Holds(b) {
		t.Error("the new name lost its number to a release under the old name")
	}
	tab.Release(b, n)
	if tab.Holds(b) {
		t.Error("the new name holds a number after its release")
	}
	// Over a name with a live number of its own.
	nc := tab.Acquire(c)
	m := tab.Acquire(DirName("m", "d"))
	tab.Rename(DirName("m", "d"), c, m)
	if got := tab.Acquire(c); got != m {
		t.Errorf("Acquire of a name moved over: %d, want the moved %d", got, m)
	}
	tab.Release(c, nc) // the replaced node is forgotten
	if got := tab.Acquire(c); got != m {
		t.Errorf("after the replaced node's release: %d, want %d", got, m)
	}
}
