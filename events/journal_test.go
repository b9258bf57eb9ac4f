package events

import (
	"testing"

	"github.com/ucmfs/ucmfs/format"
)

func TestJournalWindow(t *testing.T) {
	j := New(4)
	for range 6 {
		j.Append(Event{Type: Stored})
	}
	buf := make([]Event, 8)
	n, next, lost := j.Read(1, buf)
	if n != 4 || next != 7 || lost != (Gap{1, 2}) || lost.Count() != 2 || buf[0].Seq != 3 {
		t.Errorf("from 1: n %d next %d lost %+v first %d", n, next, lost, buf[0].Seq)
	}
	if n, next, lost = j.Read(0, buf); n != 4 || next != 7 || lost.Count() != 0 {
		t.Errorf("from 0 (oldest): n %d next %d lost %+v", n, next, lost)
	}
	if n, next, _ = j.Read(7, buf); n != 0 || next != 7 {
		t.Errorf("from the next: n %d next %d", n, next)
	}
	if n, _, lost = j.Read(100, buf); n != 4 || lost.Count() != 0 {
		t.Errorf("a number of an earlier run reads from the oldest: n %d lost %+v", n, lost)
	}
	select {
	case <-j.Wait(7):
		t.Error("Wait(7) ready with no event 7")
	default:
	}
	w := j.Wait(7)
	j.Append(Event{Type: Removed})
	<-w
	select {
	case <-j.Wait(7):
	default:
		t.Error("Wait(7) not ready after event 7")
	}
}

func TestEngineHash(t *testing.T) {
	id, _ := format.ParseID("00112233445566778899aabbccddeeff")
	if h, ok := EngineHash(format.Key{Model: "m", ID: id, Kind: format.Block}); !ok || h != 0x8899aabbccddeeff {
		t.Errorf("ucmb block: %x %v", h, ok)
	}
	name := "0a1/b2_g0/0a1b2c3d0000000000000000000000000000000000000000000000000102030405060708.bin"
	if h, ok := EngineHash(format.FileKey("v", name)); !ok || h != 0x0102030405060708 {
		t.Errorf("vLLM fs tier file: %x %v", h, ok)
	}
	for _, name := range []string{"config.json", "x/0102030405060708.tmp", "x/01020304050607.bin", "x/010203040506070G.bin", "x/0102030405060708A.bin"} {
		if _, ok := EngineHash(format.FileKey("v", name)); ok {
			t.Errorf("%s: a hash where none can be known", name)
		}
	}
}

func TestMediums(t *testing.T) {
	got := Mediums([]string{"mem", "nvme", "nfs", "nfs"})
	want := []string{"CPU_TIER_ucmfs", "DISK_TIER_ucmfs", "DISK_TIER_ucmfs_nfs", "DISK_TIER_ucmfs_nfs_3"}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("Mediums: %v, want %v", got, want)
			break
		}
	}
}

// BenchmarkJournalAppend is the cost every publish, write-back, promotion
// and eviction pays for the journal: one Append, nobody waiting.
func BenchmarkJournalAppend(b *testing.B) {
	j := New(0)
	k := format.FileKey("m", "a/b.bin")
	for b.Loop() {
		j.Append(Event{Type: Stored, Tier: 0, Size: 1, Key: k})
	}
}
