package tiertest

import (
	"bytes"
	"errors"
	"io"
	"sync"
	"testing"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/tiers"
)

func testInvisibleBeforeCommit(t *testing.T, tier tiers.Tier) {
	key := Key("m", 1)
	data := Payload(1, 5000)
	w, err := tier.Create(key)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	_, err = tier.Stat(key)
	wantErr(t, "stat before commit", err, tiers.ErrNotFound)
	_, err = tier.Open(key)
	wantErr(t, "open before commit", err, tiers.ErrNotFound)
	if n := len(listed(tier, "")); n != 0 {
		t.Fatalf("List shows %d files before commit", n)
	}
	wantUsage(t, tier, 0, 0)
	if _, err := w.Commit(tiers.CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, ok := listed(tier, "m")[key]; !ok {
		t.Fatal("List does not show the committed file")
	}
	wantUsage(t, tier, 1, 5000)
}

func testAbort(t *testing.T, tier tiers.Tier) {
	key := Key("m", 1)
	w, err := tier.Create(key)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(Payload(1, 3000)); err != nil {
		t.Fatal(err)
	}
	w.Abort()
	w.Abort() // harmless
	if _, err := w.Commit(tiers.CommitOptions{}); err == nil {
		t.Fatal("Commit after Abort succeeded")
	}
	_, err = tier.Stat(key)
	wantErr(t, "stat after abort", err, tiers.ErrNotFound)
	wantUsage(t, tier, 0, 0)
	// Nothing is left that blocks the key.
	data := Payload(2, 100)
	Put(t, tier, key, data, tiers.CommitOptions{})
	if !bytes.Equal(Read(t, tier, key), data) {
		t.Fatal("file published after an abort has other bytes")
	}
}

func testSecondCommitExists(t *testing.T, tier tiers.Tier) {
	key := Key("m", 1)
	first := Payload(1, 4000)
	Put(t, tier, key, first, tiers.CommitOptions{})
	w, err := tier.Create(key)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(Payload(2, 6000)); err != nil {
		t.Fatal(err)
	}
	_, err = w.Commit(tiers.CommitOptions{})
	wantErr(t, "second commit", err, tiers.ErrExist)
	if _, err := w.Commit(tiers.CommitOptions{}); err == nil {
		t.Fatal("Commit after ErrExist succeeded")
	}
	w.Abort()
	if !bytes.Equal(Read(t, tier, key), first) {
		t.Fatal("the first copy changed after a second commit")
	}
	wantUsage(t, tier, 1, 4000)
}

func testRemove(t *testing.T, tier tiers.Tier) {
	key := Key("m", 1)
	Put(t, tier, key, Payload(1, 2000), tiers.CommitOptions{})
	if err := tier.Remove(key); err != nil {
		t.Fatal(err)
	}
	_, err := tier.Stat(key)
	wantErr(t, "stat after remove", err, tiers.ErrNotFound)
	_, err = tier.Open(key)
	wantErr(t, "open after remove", err, tiers.ErrNotFound)
	wantErr(t, "second remove", tier.Remove(key), tiers.ErrNotFound)
	wantUsage(t, tier, 0, 0)
	data := Payload(2, 10)
	Put(t, tier, key, data, tiers.CommitOptions{})
	if !bytes.Equal(Read(t, tier, key), data) {
		t.Fatal("file published again after remove has other bytes")
	}
}

func testRemovedWhileOpen(t *testing.T, tier tiers.Tier) {
	key := Key("m", 1)
	data := Payload(1, 200<<10)
	Put(t, tier, key, data, tiers.CommitOptions{})
	f, err := tier.Open(key)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := tier.Remove(key); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(f)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("reading a removed file through an open descriptor: %d bytes, %v", len(got), err)
	}
}

func testList(t *testing.T, tier tiers.Tier) {
	want := map[string]int{"a": 3, "b": 2}
	for model, n := range want {
		for i := 0; i < n; i++ {
			Put(t, tier, Key(model, i), Payload(uint64(i), 100+i), tiers.CommitOptions{})
		}
	}
	for model, n := range want {
		got := listed(tier, model)
		if len(got) != n {
			t.Fatalf("List(%q): %d files, want %d", model, len(got), n)
		}
		for i := 0; i < n; i++ {
			info, ok := got[Key(model, i)]
			if !ok || info.Size != int64(100+i) {
				t.Fatalf("List(%q) lacks %s or has the wrong size: %+v", model, Key(model, i), info)
			}
		}
	}
	if n := len(listed(tier, "")); n != 5 {
		t.Fatalf("List(\"\"): %d files, want 5", n)
	}
	if n := len(listed(tier, "c")); n != 0 {
		t.Fatalf("List of an unknown model: %d files", n)
	}
	calls := 0
	tier.List("", func(tiers.Info) bool { calls++; return false })
	if calls != 1 {
		t.Fatalf("List went on after fn returned false: %d calls", calls)
	}
}

func testUsage(t *testing.T, tier tiers.Tier) {
	var used int64
	for i := 0; i < 10; i++ {
		Put(t, tier, Key("m", i), Payload(uint64(i), 1000*(i+1)), tiers.CommitOptions{})
		used += int64(1000 * (i + 1))
		wantUsage(t, tier, int64(i+1), used)
	}
	for i := 0; i < 10; i += 2 {
		if err := tier.Remove(Key("m", i)); err != nil {
			t.Fatal(err)
		}
		used -= int64(1000 * (i + 1))
	}
	wantUsage(t, tier, 5, used)
}

func testConcurrentDistinct(t *testing.T, tier tiers.Tier) {
	const writers, each = 8, 4
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for g := 0; g < writers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				n := g*each + i
				if _, err := put(tier, Key("m", n), Payload(uint64(n), 1000+n*100), tiers.CommitOptions{}); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var used int64
	for n := 0; n < writers*each; n++ {
		if !bytes.Equal(Read(t, tier, Key("m", n)), Payload(uint64(n), 1000+n*100)) {
			t.Fatalf("block %d has other bytes", n)
		}
		used += int64(1000 + n*100)
	}
	wantUsage(t, tier, writers*each, used)
}

func testConcurrentSameKey(t *testing.T, tier tiers.Tier) {
	const writers = 8
	key := Key("m", 1)
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for g := 0; g < writers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Sizes differ, so a file mixing two writers shows.
			_, errs[g] = put(tier, key, Payload(uint64(g), 50000+g*1000), tiers.CommitOptions{})
		}()
	}
	wg.Wait()
	winner := -1
	for g, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Fatalf("writers %d and %d both published", winner, g)
		case err == nil:
			winner = g
		case !errors.Is(err, tiers.ErrExist):
			t.Fatalf("writer %d: %v", g, err)
		}
	}
	if winner < 0 {
		t.Fatal("no writer published")
	}
	want := Payload(uint64(winner), 50000+winner*1000)
	if !bytes.Equal(Read(t, tier, key), want) {
		t.Fatal("the published file is not the winner's bytes")
	}
	wantUsage(t, tier, 1, int64(len(want)))
}

func testCRC(t *testing.T, tier tiers.Tier) {
	with, without := Key("m", 1), Key("m", 2)
	info := Put(t, tier, with, Payload(1, 500), tiers.CommitOptions{CRC: 0xdeadbeef, HasCRC: true})
	if !info.HasCRC || info.CRC != 0xdeadbeef {
		t.Fatalf("commit info lost the CRC: %+v", info)
	}
	Put(t, tier, without, Payload(2, 500), tiers.CommitOptions{})
	st, err := tier.Stat(with)
	if err != nil || !st.HasCRC || st.CRC != 0xdeadbeef {
		t.Fatalf("stat: %+v %v, want CRC deadbeef", st, err)
	}
	st, err = tier.Stat(without)
	if err != nil || st.HasCRC {
		t.Fatalf("stat of a file committed without CRC: %+v %v", st, err)
	}
	if l := listed(tier, "m")[with]; !l.HasCRC || l.CRC != 0xdeadbeef {
		t.Fatalf("List lost the CRC: %+v", l)
	}
}

func testNotFound(t *testing.T, tier tiers.Tier) {
	key := Key("m", 1)
	_, err := tier.Stat(key)
	wantErr(t, "stat", err, tiers.ErrNotFound)
	_, err = tier.Open(key)
	wantErr(t, "open", err, tiers.ErrNotFound)
	wantErr(t, "remove", tier.Remove(key), tiers.ErrNotFound)
	// Another model, same id.
	Put(t, tier, key, Payload(1, 10), tiers.CommitOptions{})
	_, err = tier.Stat(format.Key{Model: "other", ID: key.ID})
	wantErr(t, "stat in another model", err, tiers.ErrNotFound)
}

func testBlockAndRepr(t *testing.T, tier tiers.Tier) {
	block := Key("m", 1)
	repr := format.Key{Model: block.Model, ID: block.ID, Kind: format.Repr}
	Put(t, tier, block, Payload(1, 700), tiers.CommitOptions{})
	_, err := tier.Stat(repr)
	wantErr(t, "stat of an absent sidecar", err, tiers.ErrNotFound)
	Put(t, tier, repr, Payload(2, 300), tiers.CommitOptions{})
	if !bytes.Equal(Read(t, tier, block), Payload(1, 700)) || !bytes.Equal(Read(t, tier, repr), Payload(2, 300)) {
		t.Fatal("block and sidecar of one id are not separate files")
	}
	if err := tier.Remove(repr); err != nil {
		t.Fatal(err)
	}
	if _, err := tier.Stat(block); err != nil {
		t.Fatalf("removing the sidecar took the block: %v", err)
	}
	wantUsage(t, tier, 1, 700)
}

func testClose(t *testing.T, tier tiers.Tier) {
	Put(t, tier, Key("m", 1), Payload(1, 10), tiers.CommitOptions{})
	if err := tier.Close(); err != nil {
		t.Fatal(err)
	}
	_, err := tier.Create(Key("m", 2))
	wantErr(t, "create after close", err, tiers.ErrClosed)
	if err := tier.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}
