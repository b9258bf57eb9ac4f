package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ucmfs/ucmfs/internal/engineproto"
	"golang.org/x/sys/unix"
)

// kvRun is one daemon's part of TestKVEvents: the files written so far
// (path to block hash) and the mount.
type kvRun struct {
	d      *daemon
	hashes map[string]uint64
}

// TestKVEvents drives a scripted run through the real binary with
// --kv-events and a subscriber written from vLLM's example
// (testdata/kv_subscriber.py, pyzmq and msgpack): blocks of a ucmb model
// published, written back, evicted from memory by newer ones, promoted
// back by a pin, unlinked; vLLM's fs tier storing and deleting blocks in a
// files model; then a restart. The subscriber must see every stored and
// removed block with the hash and medium .ucm/events gives, in the same
// order, and end up believing what the index holds (user.ucm.tiers);
// after the restart, AllBlocksCleared and then what the tiers hold.
func TestKVEvents(t *testing.T) {
	py := zmqPython(t)
	dir := testDir(t)
	mnt, tier := filepath.Join(dir, "mnt"), filepath.Join(dir, "tier")
	os.Mkdir(mnt, 0o755)
	args := []string{"--memory", "1MiB", "--kv-events", "tcp://127.0.0.1:0", "--kv-events-models", "m,v"}
	r := &kvRun{d: mountUCM(t, mountOpts{Mnt: mnt, Tier: tier, Args: args}), hashes: map[string]uint64{}}
	sentinel1 := strings.Repeat("e", 32)
	sub := startSubscriber(t, py, r.d, idHash(sentinel1))

	// A ucmb model: published into memory, written back, evicted by
	// newer blocks (a 1 MiB memory tier), promoted back by a pin,
	// unlinked.
	first := kvIDs("a", 8)
	r.write(t, "m", first)
	flushAll(t, r.d)
	r.write(t, "m", kvIDs("b", 300))
	flushAll(t, r.d)
	pin := blockPath(mnt, "m", first[0])
	if err := unix.Setxattr(pin, "user.ucm.pinned", []byte("1"), 0); err != nil {
		t.Fatalf("pin: %v", err)
	}
	if err := unix.Setxattr(pin, "user.ucm.pinned", []byte("0"), 0); err != nil {
		t.Fatalf("unpin: %v", err)
	}
	r.unlink(t, blockPath(mnt, "m", first[1]))
	r.unlink(t, blockPath(mnt, "m", kvIDs("b", 1)[0]))

	// vLLM's fs offloading tier in a files model.
	v := r.vllm(t)
	for i := range 4 {
		if err := v.Store(i, engineData("kv", i)); err != nil {
			t.Fatal(err)
		}
		r.hashes[v.Path(i)] = fileHash(t, v.Path(i))
	}
	if err := v.Delete(3); err != nil {
		t.Fatal(err)
	}
	flushAll(t, r.d)
	r.check(t, sub, sentinel1, true)

	// A restart: AllBlocksCleared, what the tiers hold, then the run.
	if code := r.d.stop(); code != 0 {
		t.Fatalf("SIGTERM: exit %d", code)
	}
	r.d = mountUCM(t, mountOpts{Mnt: mnt, Tier: tier, Args: args})
	sentinel2 := strings.Repeat("f", 32)
	sub2 := startSubscriber(t, py, r.d, idHash(sentinel2))
	if _, err := v.Load(0, len(engineData("kv", 0))); err != nil {
		t.Fatal(err)
	}
	if err := v.Delete(1); err != nil {
		t.Fatal(err)
	}
	r.unlink(t, blockPath(mnt, "m", first[2]))
	r.write(t, "m", kvIDs("c", 4))
	flushAll(t, r.d)
	r.check(t, sub2, sentinel2, false)
}

// kvIDs are n block ids ending in a hex digit, prefix.
func kvIDs(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%031x%s", i, prefix) // the prefix in the hash (the last 8 bytes)
	}
	return out
}

// write writes ids into model and records their hashes.
func (r *kvRun) write(t *testing.T, model string, ids []string) {
	t.Helper()
	writeBlocks(t, r.d, model, ids)
	for _, id := range ids {
		r.hashes[blockPath(r.d.Mnt, model, id)] = idHash(id)
	}
}

// unlink removes a file through the mount.
func (r *kvRun) unlink(t *testing.T, path string) {
	t.Helper()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
}

// vllm sets up vLLM's fs tier on a files model "v".
func (r *kvRun) vllm(t *testing.T) *engineproto.VLLM {
	t.Helper()
	root := r.d.path("v")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Setxattr(root, "user.ucm.layout", []byte("files"), 0); err != nil {
		t.Fatal(err)
	}
	v := &engineproto.VLLM{Root: root, Salt: "kv", Model: "org_model", Direct: true}
	if err := v.Setup(); err != nil {
		t.Fatal(err)
	}
	return v
}

// fileHash is the hash a router knows a file of vLLM's fs tier by: the
// last 16 hex digits of its name.
func fileHash(t *testing.T, path string) uint64 {
	t.Helper()
	name := strings.TrimSuffix(filepath.Base(path), ".bin")
	return idHash(name[len(name)-16:])
}

// check takes a snapshot of the index that no event interleaves with,
// writes the sentinel block, waits for the subscriber to see it, and
// compares: the subscriber's belief at the sentinel with the snapshot
// and the events journaled between; and, when ordered (the first run,
// whose journal starts empty like the publisher), the subscriber's
// tuples with .ucm/events', one by one, none of them a removal of what
// the subscriber was not told was stored.
func (r *kvRun) check(t *testing.T, sub *subscriber, sentinel string, ordered bool) {
	t.Helper()
	var snap kvState
	var at uint64
	for try := 0; ; try++ {
		_, before := readJournal(t, r.d.Mnt)
		snap = indexState(t, r.hashes)
		if _, after := readJournal(t, r.d.Mnt); after == before {
			at = after
			break
		}
		if try == 20 {
			t.Fatal("events kept coming: no quiet snapshot of the index")
		}
	}
	writeBlocks(t, r.d, "m", []string{sentinel})
	got, gaps := sub.wait(t)
	defer func() { r.hashes[blockPath(r.d.Mnt, "m", sentinel)] = idHash(sentinel) }()
	lines, _ := readJournal(t, r.d.Mnt)
	var journal []kvTuple
	want := snap
	sh := idHash(sentinel)
	for _, l := range lines {
		tp, ok := l.tuple()
		if !ok {
			continue
		}
		if tp.Hash == sh && tp.Type == "BlockStored" {
			break
		}
		journal = append(journal, tp)
		if l.Seq >= at {
			want.apply(tp)
		}
	}
	var belief = kvState{}
	var seen []kvTuple
	for _, tp := range got {
		if tp.Hash == sh && tp.Type == "BlockStored" {
			break
		}
		if ordered && tp.Type == "BlockRemoved" && !belief[tp.Hash][tp.Medium] {
			t.Errorf("tuple %d: a removal of %016x@%s, which the subscriber was not told was stored", len(seen), tp.Hash, tp.Medium)
		}
		seen = append(seen, tp)
		belief.apply(tp)
	}
	t.Logf("subscriber: %d tuples, %d gaps replayed; journal: %d tuples; held: %d blocks", len(seen), gaps, len(journal), len(belief))
	if ordered && !slices.Equal(seen, journal) {
		i := 0
		for i < min(len(seen), len(journal)) && seen[i] == journal[i] {
			i++
		}
		t.Errorf("the subscriber's events differ from .ucm/events' from tuple %d on (%d and %d tuples): got %v, want %v",
			i, len(seen), len(journal), seen[i:min(i+3, len(seen))], journal[i:min(i+3, len(journal))])
	}
	if !ordered && (len(seen) == 0 || seen[0].Type != "AllBlocksCleared") {
		t.Errorf("after a restart the subscriber's first event is not AllBlocksCleared: %v", seen[:min(3, len(seen))])
	}
	if extra, missing := belief.minus(want), want.minus(belief); extra != "" || missing != "" {
		t.Errorf("the subscriber believes what the index does not hold: %s\nthe index holds what the subscriber does not know: %s", extra, missing)
	}
}

// TestKVEventsSharedTier: a block another host puts in a shared tier,
// which no lookup through this mount asks about, reaches a subscriber of
// this mount's --kv-events (the tier's background rescan runs every
// negative TTL when events are published).
func TestKVEventsSharedTier(t *testing.T) {
	py := zmqPython(t)
	dir := sharedDir(t)
	d := mountUCM(t, sharedMount("nfs:"+dir, "--kv-events", "tcp://127.0.0.1:0", "--kv-events-models", "m"))
	putBlocks(t, d, "m", kvIDs("1", 2)) // the model exists on the tier
	id := kvIDs("2", 1)[0]
	sub := startSubscriber(t, py, d, idHash(id))
	plantBlocks(t, dir, "m", []string{id})
	got, _ := sub.wait(t)
	last := got[len(got)-1]
	if last.Type != "BlockStored" || last.Hash != idHash(id) || last.Medium != "DISK_TIER_ucmfs" {
		t.Errorf("the planted block came as %+v", last)
	}
}
