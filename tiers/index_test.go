package tiers

import (
	"testing"
	"unsafe"

	"github.com/ucmfs/ucmfs/hashdir"
)

func ikey(model string, n byte) hashdir.Key { return hashdir.Key{Model: model, ID: hashdir.ID{n}} }

// iadd reserves and adds a file of size bytes.
func iadd(t *testing.T, x *index, k hashdir.Key, size int64) {
	t.Helper()
	if !x.reserve(size) {
		t.Fatalf("no room for %s (%d bytes)", k, size)
	}
	if _, ok := x.add(newEntry(Info{Key: k, Size: size})); !ok {
		t.Fatalf("%s already indexed", k)
	}
}

func TestIndexAccounting(t *testing.T) {
	x := newIndex(1000)
	iadd(t, x, ikey("a", 1), 300)
	iadd(t, x, ikey("a", 2), 200)
	iadd(t, x, ikey("b", 1), 100)
	if u := x.usage(); u != (Usage{Capacity: 1000, Used: 600, Files: 3}) {
		t.Fatalf("usage %+v", u)
	}
	if !x.reserve(400) || x.reserve(1) {
		t.Fatal("reservations must fill the capacity exactly")
	}
	if x.room() != 0 {
		t.Fatalf("room %d with everything reserved", x.room())
	}
	x.unreserve(400)
	if f, b := x.modelUsage("a"); f != 2 || b != 500 {
		t.Fatalf("model a: %d files %d bytes", f, b)
	}
	if _, ok := x.remove(ikey("a", 1)); !ok {
		t.Fatal("remove")
	}
	if _, ok := x.remove(ikey("a", 1)); ok {
		t.Fatal("removed twice")
	}
	if u := x.usage(); u.Used != 300 || u.Files != 2 || x.room() != 700 {
		t.Fatalf("after remove %+v room %d", u, x.room())
	}
	// A racing adopt wins; add gives its reservation back.
	x.adopt(newEntry(Info{Key: ikey("c", 1), Size: 50}))
	x.reserve(60)
	if info, ok := x.add(newEntry(Info{Key: ikey("c", 1), Size: 60})); ok || info.Size != 50 {
		t.Fatalf("add over an adopted entry: %+v %v", info, ok)
	}
	if u := x.usage(); u.Used != 350 || x.room() != 650 {
		t.Fatalf("after the lost add %+v room %d", u, x.room())
	}
	if got := x.removeModel("a"); len(got) != 1 {
		t.Fatalf("removeModel: %d entries", len(got))
	}
	if names := x.modelNames(); len(names) != 2 || names[0] != "b" || names[1] != "c" {
		t.Fatalf("models %v", names)
	}
	if got := x.drain(); len(got) != 2 || x.usage().Used != 0 {
		t.Fatal("drain")
	}
}

func TestIndexLRUAndEviction(t *testing.T) {
	x := newIndex(500)
	for i := byte(0); i < 5; i++ {
		iadd(t, x, ikey("m", i), 100)
	}
	x.touch(ikey("m", 0))
	x.setFlags(ikey("m", 1), func(e *entry) { e.set(flagDirty, true) })
	x.setFlags(ikey("m", 2), func(e *entry) { e.set(flagPinned, true) })
	want := []byte{1, 2, 3, 4, 0}
	for i, info := range x.oldest(10) {
		if info.Key != ikey("m", want[i]) {
			t.Fatalf("oldest[%d] = %s, want %d", i, info.Key, want[i])
		}
	}
	if n := len(x.oldest(2)); n != 2 {
		t.Fatalf("oldest(2) gave %d", n)
	}
	got := x.evictClean(150)
	if len(got) != 2 || got[0].key() != ikey("m", 3) || got[1].key() != ikey("m", 4) {
		t.Fatalf("evictClean(150) took %d entries", len(got))
	}
	if got := x.evictClean(1000); len(got) != 1 || got[0].key() != ikey("m", 0) {
		t.Fatalf("evictClean(all) took %d entries", len(got))
	}
	if p, d := x.flags(ikey("m", 1)); p || !d {
		t.Fatal("flags of the dirty entry")
	}
	if u := x.usage(); u.Files != 2 {
		t.Fatalf("dirty and pinned entries must stay: %+v", u)
	}
}

func TestIndexEachStops(t *testing.T) {
	x := newIndex(1 << 20)
	for i := byte(0); i < 10; i++ {
		iadd(t, x, ikey("a", i), 1)
		iadd(t, x, ikey("b", i), 1)
	}
	n := 0
	x.each("", func(Info) bool { n++; return n < 13 })
	if n != 13 {
		t.Fatalf("each went on to %d after fn returned false", n)
	}
	n = 0
	x.each("b", func(i Info) bool {
		if i.Key.Model != "b" {
			t.Fatalf("each(b) gave %s", i.Key)
		}
		n++
		return true
	})
	if n != 10 {
		t.Fatalf("each(b) gave %d", n)
	}
}

func TestIndexShardKeys(t *testing.T) {
	x := newIndex(1 << 20)
	for i := byte(0); i < 6; i++ {
		iadd(t, x, hashdir.Key{Model: "m", ID: hashdir.ID{i % 3, i}}, 1)
	}
	iadd(t, x, hashdir.Key{Model: "m", ID: hashdir.ID{1, 9}, Kind: hashdir.Repr}, 1)
	iadd(t, x, hashdir.Key{Model: "other", ID: hashdir.ID{1, 1}}, 1)
	got := x.shardKeys("m", 1, nil)
	if len(got) != 3 {
		t.Fatalf("shard 01 of m: %v, want 3 keys", got)
	}
	for _, k := range got {
		if k.Model != "m" || k.ID[0] != 1 {
			t.Fatalf("shard 01 of m lists %s", k)
		}
	}
	for i := byte(0); i < 6; i += 3 {
		x.remove(hashdir.Key{Model: "m", ID: hashdir.ID{0, i}})
	}
	if got := x.shardKeys("m", 0, nil); len(got) != 0 {
		t.Fatalf("emptied shard lists %v", got)
	}
	if got := x.shardKeys("none", 1, nil); len(got) != 0 {
		t.Fatalf("absent model lists %v", got)
	}
	if f, _ := x.modelUsage("m"); f != 5 {
		t.Fatalf("model m holds %d files, want 5", f)
	}
}

// TestIndexEntrySize: an entry stays small, since a tier holds millions.
func TestIndexEntrySize(t *testing.T) {
	if n := unsafe.Sizeof(entry{}); n > 64 {
		t.Fatalf("an index entry is %d bytes, want at most 64", n)
	}
}
