package index

import (
	"testing"
	"time"
	"unsafe"

	"github.com/ucmfs/ucmfs/format"
)

func ikey(model string, n byte) format.Key { return format.Key{Model: model, ID: format.ID{n}} }

// iadd reserves and adds a file of size bytes.
func iadd(t *testing.T, x *Index, k format.Key, size int64) {
	t.Helper()
	if !x.Reserve(size) {
		t.Fatalf("no room for %s (%d bytes)", k, size)
	}
	if _, ok := x.Add(NewEntry(k, size, time.Time{}, 0, false)); !ok {
		t.Fatalf("%s already indexed", k)
	}
}

func TestIndexAccounting(t *testing.T) {
	x := New(1000)
	iadd(t, x, ikey("a", 1), 300)
	iadd(t, x, ikey("a", 2), 200)
	iadd(t, x, ikey("b", 1), 100)
	if u := x.Usage(); u != (Usage{Capacity: 1000, Used: 600, Charged: 600, Files: 3}) {
		t.Fatalf("usage %+v", u)
	}
	if !x.Reserve(400) || x.Reserve(1) {
		t.Fatal("reservations must fill the capacity exactly")
	}
	if x.Room() != 0 {
		t.Fatalf("room %d with everything reserved", x.Room())
	}
	x.Unreserve(400)
	if f, b := x.ModelUsage("a"); f != 2 || b != 500 {
		t.Fatalf("model a: %d files %d bytes", f, b)
	}
	if _, ok := x.Remove(ikey("a", 1)); !ok {
		t.Fatal("remove")
	}
	if _, ok := x.Remove(ikey("a", 1)); ok {
		t.Fatal("removed twice")
	}
	if u := x.Usage(); u.Used != 300 || u.Files != 2 || x.Room() != 700 {
		t.Fatalf("after remove %+v room %d", u, x.Room())
	}
	// A racing adopt wins; add gives its reservation back.
	x.Adopt(NewEntry(ikey("c", 1), 50, time.Time{}, 0, false))
	x.Reserve(60)
	if info, ok := x.Add(NewEntry(ikey("c", 1), 60, time.Time{}, 0, false)); ok || info.Size != 50 {
		t.Fatalf("add over an adopted Entry: %+v %v", info, ok)
	}
	if u := x.Usage(); u.Used != 350 || x.Room() != 650 {
		t.Fatalf("after the lost add %+v room %d", u, x.Room())
	}
	if got := x.RemoveModel("a"); len(got) != 1 {
		t.Fatalf("removeModel: %d entries", len(got))
	}
	if names := x.ModelNames(); len(names) != 2 || names[0] != "b" || names[1] != "c" {
		t.Fatalf("models %v", names)
	}
	if got := x.Drain(); len(got) != 2 || x.Usage().Used != 0 {
		t.Fatal("drain")
	}
}

func TestIndexLRUAndEviction(t *testing.T) {
	x := New(500)
	for i := byte(0); i < 5; i++ {
		iadd(t, x, ikey("m", i), 100)
	}
	x.Touch(ikey("m", 0))
	x.SetFlags(ikey("m", 1), func(e *Entry) { e.Set(Dirty, true) })
	x.SetFlags(ikey("m", 2), func(e *Entry) { e.Set(Pinned, true) })
	want := []byte{1, 2, 3, 4, 0}
	for i, e := range x.Oldest(10) {
		if e.Key() != ikey("m", want[i]) {
			t.Fatalf("oldest[%d] = %s, want %d", i, e.Key(), want[i])
		}
	}
	if n := len(x.Oldest(2)); n != 2 {
		t.Fatalf("oldest(2) gave %d", n)
	}
	got := x.EvictClean(150)
	if len(got) != 2 || got[0].Key() != ikey("m", 3) || got[1].Key() != ikey("m", 4) {
		t.Fatalf("evictClean(150) took %d entries", len(got))
	}
	if got := x.EvictClean(1000); len(got) != 1 || got[0].Key() != ikey("m", 0) {
		t.Fatalf("evictClean(all) took %d entries", len(got))
	}
	if p, d := x.Flags(ikey("m", 1)); p || !d {
		t.Fatal("flags of the dirty Entry")
	}
	if u := x.Usage(); u.Files != 2 {
		t.Fatalf("dirty and pinned entries must stay: %+v", u)
	}
}

func TestIndexEachStops(t *testing.T) {
	x := New(1 << 20)
	for i := byte(0); i < 10; i++ {
		iadd(t, x, ikey("a", i), 1)
		iadd(t, x, ikey("b", i), 1)
	}
	n := 0
	x.Each("", func(*Entry) bool { n++; return n < 13 })
	if n != 13 {
		t.Fatalf("each went on to %d after fn returned false", n)
	}
	n = 0
	x.Each("b", func(i *Entry) bool {
		if i.Key().Model != "b" {
			t.Fatalf("each(b) gave %s", i.Key())
		}
		n++
		return true
	})
	if n != 10 {
		t.Fatalf("each(b) gave %d", n)
	}
}

func TestIndexShardKeys(t *testing.T) {
	x := New(1 << 20)
	for i := byte(0); i < 6; i++ {
		iadd(t, x, format.Key{Model: "m", ID: format.ID{i % 3, i}}, 1)
	}
	iadd(t, x, format.Key{Model: "m", ID: format.ID{1, 9}, Kind: format.Repr}, 1)
	iadd(t, x, format.Key{Model: "other", ID: format.ID{1, 1}}, 1)
	got := x.ShardKeys("m", 1, nil)
	if len(got) != 3 {
		t.Fatalf("shard 01 of m: %v, want 3 keys", got)
	}
	for _, k := range got {
		if k.Model != "m" || k.ID[0] != 1 {
			t.Fatalf("shard 01 of m lists %s", k)
		}
	}
	for i := byte(0); i < 6; i += 3 {
		x.Remove(format.Key{Model: "m", ID: format.ID{0, i}})
	}
	if got := x.ShardKeys("m", 0, nil); len(got) != 0 {
		t.Fatalf("emptied shard lists %v", got)
	}
	if got := x.ShardKeys("none", 1, nil); len(got) != 0 {
		t.Fatalf("absent model lists %v", got)
	}
	if f, _ := x.ModelUsage("m"); f != 5 {
		t.Fatalf("model m holds %d files, want 5", f)
	}
}

// TestIndexEntrySize: an Entry stays small, since a tier holds millions
// (64 bytes, and the pointer to a File's path since the files layout).
func TestIndexEntrySize(t *testing.T) {
	if n := unsafe.Sizeof(Entry{}); n > 72 {
		t.Fatalf("an index Entry is %d bytes, want at most 72", n)
	}
}

// TestIndexFileName: a File's entry gives back its path in its key.
func TestIndexFileName(t *testing.T) {
	x := New(1 << 30)
	k := format.FileKey("m", "a/b/c.bin")
	x.Add(NewEntry(k, 10, time.Time{}, 0, false))
	e, ok := x.Get(k)
	if !ok || e.Key() != k {
		t.Fatalf("entry of %v: %v %v", k, e.Key(), ok)
	}
	if c, _ := x.ModelCount("m"); c.Blocks != 1 {
		t.Errorf("a File counts as a block: %+v", c)
	}
}

// TestDirtyShardKeys: only the dirty entries of the shard asked, of the
// model asked.
func TestDirtyShardKeys(t *testing.T) {
	x := New(1000)
	for _, k := range []format.Key{ikey("m", 1), ikey("m", 2), ikey("o", 1)} {
		iadd(t, x, k, 10)
		x.SetFlags(k, func(e *Entry) { e.Set(Dirty, true) })
	}
	iadd(t, x, format.Key{Model: "m", ID: format.ID{1, 1}}, 10) // shard 1, clean
	got := x.DirtyShardKeys("m", 1)
	if len(got) != 1 || got[0] != ikey("m", 1) {
		t.Errorf("dirty keys of m, shard 1: %v", got)
	}
	if got := x.DirtyShardKeys("none", 1); got != nil {
		t.Errorf("a model not indexed: %v", got)
	}
}

// TestIndexMaxFiles: at its most files an index has no room, whatever
// the bytes; a reservation in flight counts as a file; eviction frees a
// file; files adopted past the bound are counted.
func TestIndexMaxFiles(t *testing.T) {
	x := New(1 << 20)
	x.SetMaxFiles(3)
	iadd(t, x, ikey("a", 1), 0)
	iadd(t, x, ikey("a", 2), 10)
	if !x.Reserve(0) {
		t.Fatal("no room for a third file")
	}
	if x.Reserve(0) || x.Room() >= 0 {
		t.Fatalf("a fourth file reserved (room %d)", x.Room())
	}
	x.Unreserve(0)
	iadd(t, x, ikey("a", 3), 0)
	if x.Reserve(1) || x.Room() >= 0 {
		t.Fatalf("room %d with 3 files of 3", x.Room())
	}
	if u := x.Usage(); u.MaxFiles != 3 || u.Files != 3 {
		t.Fatalf("usage %+v", u)
	}
	if ev := x.EvictClean(0); len(ev) != 1 || ev[0].Key() != ikey("a", 1) {
		t.Fatalf("evicted %d entries, want the oldest one", len(ev))
	}
	if x.Room() != 1<<20-10 {
		t.Fatalf("room %d after an eviction", x.Room())
	}
	x.Adopt(NewEntry(ikey("b", 1), 5, time.Time{}, 0, false))
	x.Adopt(NewEntry(ikey("b", 2), 5, time.Time{}, 0, false))
	if u := x.Usage(); u.Files != 4 || x.Room() >= 0 {
		t.Fatalf("adopted past the bound: %+v room %d", u, x.Room())
	}
	x.SetMaxFiles(0)
	if x.Room() != 1<<20-20 {
		t.Fatalf("room %d with no bound", x.Room())
	}
}

// TestSetCRCForReplacedEntry: a CRC read from the file of an Entry that
// another Entry of its key replaced since is not recorded on the new one
// (its file is another version), and is on the Entry it was read for.
func TestSetCRCForReplacedEntry(t *testing.T) {
	x := New(1 << 20)
	k := ikey("a", 1)
	iadd(t, x, k, 10)
	old := x.EntryOf(k)
	x.Remove(k)
	iadd(t, x, k, 20)
	x.SetCRCFor(k, old, 7, true)
	if e, _ := x.Get(k); e.Is(CRCRead) || e.Is(HasCRC) {
		t.Fatalf("the new Entry took the CRC of the replaced one's file: %+v", e)
	}
	cur := x.EntryOf(k)
	x.SetCRCFor(k, cur, 9, true)
	if e, _ := x.Get(k); !e.Is(CRCRead) || !e.Is(HasCRC) || e.CRC != 9 {
		t.Fatalf("the current Entry did not take its CRC: %+v", e)
	}
}
