package tiers

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ucmfs/ucmfs/format"
	"golang.org/x/sys/unix"
)

// writeDirect writes data (a multiple of 4096 bytes) at 0 through p's
// O_DIRECT descriptor, as the kernel does for a passthrough writer.
func writeDirect(t *testing.T, p *PendingWrite, data []byte) {
	t.Helper()
	buf, err := unix.Mmap(-1, 0, len(data), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(buf)
	copy(buf, data)
	f := p.DirectFile()
	if f == nil {
		t.Fatal("no O_DIRECT descriptor")
	}
	if _, err := unix.Pwrite(int(f.Fd()), buf, 0); err != nil {
		t.Fatal(err)
	}
}

// TestCreateOnDisk: a file staged on the nvme tier is written through its
// O_DIRECT descriptor (or the daemon's, for its own writes), parked and
// reopened, renamed to another directory
// before it publishes, and published on the tier, not in memory; it reads
// back whole and counts as a direct write. Once the tier has no room
// (pinned files fill it), the next one publishes into memory instead. With no directory tier the file
// is staged in memory.
func TestCreateOnDisk(t *testing.T) {
	dir := t.TempDir()
	s := buildStack(t, StackConfig{}, MemConfig{Capacity: 64 << 20}, DirConfig{Kind: "nvme", Dir: dir, Capacity: 20 << 10})
	data := bytes.Repeat([]byte("0123456789abcdef"), 512) // 8 KiB
	p, err := s.CreateOnDisk(format.FileKey("m", "a/x.bin_1.tmp"))
	if err != nil {
		t.Fatal(err)
	}
	if !p.OnDisk() {
		t.Fatal("staged in memory, want on the nvme tier")
	}
	writeDirect(t, p, data)
	p.Park()
	if p.DirectFile() != nil {
		t.Error("a parked file keeps its O_DIRECT descriptor")
	}
	if err := p.Unpark(); err != nil {
		t.Fatal(err)
	}
	final := format.FileKey("m", "b/c/x.bin")
	p.Rekey(final)
	p.SetReplace()
	info, err := s.Publish(p, false)
	if err != nil {
		t.Fatal(err)
	}
	if info.Tier != 1 {
		t.Errorf("published on tier %d, want 1 (the nvme tier)", info.Tier)
	}
	if s.mem.Index().Has(final) {
		t.Error("the memory tier holds a file staged on disk")
	}
	if got, err := os.ReadFile(filepath.Join(dir, "m", "b", "c", "x.bin")); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("the tier file: %v", err)
	}
	mustEqual(t, "read back", readAll(t, s, final), data)
	if n := s.Stats().DirectWrites; n != 1 {
		t.Errorf("direct writes %d, want 1", n)
	}

	// The tier's 20 KiB hold one 8 KiB file, pinned: the next, of 12 KiB
	// and 2 bytes, publishes in memory.
	if err := s.Pin(final, true); err != nil {
		t.Fatal(err)
	}
	p, err = s.CreateOnDisk(format.FileKey("m", "y.bin"))
	if err != nil {
		t.Fatal(err)
	}
	writeDirect(t, p, data)
	// The daemon's own writes: an aligned one with O_DIRECT, another not.
	if _, err := p.WriteAt(data[:4096], 8192); err != nil {
		t.Fatal(err)
	}
	if _, err := p.WriteAt([]byte("xy"), 12288); err != nil {
		t.Fatal(err)
	}
	want := append(append(append([]byte{}, data...), data[:4096]...), "xy"...)
	staged := p.w.(*diskWriter).TempName()
	p.SetReplace()
	if info, err = s.Publish(p, false); err != nil {
		t.Fatal(err)
	}
	if info.Tier != Memory {
		t.Errorf("published on tier %d with the staging tier full, want memory", info.Tier)
	}
	mustEqual(t, "read back from memory", readAll(t, s, format.FileKey("m", "y.bin")), want)
	if _, err := os.Stat(staged); !os.IsNotExist(err) { // (the write-back's own temp files come and go)
		t.Errorf("the staging file is left in the tier: %v", err)
	}

	mem := buildStack(t, StackConfig{}, MemConfig{Capacity: 64 << 20})
	if p, err = mem.CreateOnDisk(format.FileKey("m", "z.bin")); err != nil {
		t.Fatal(err)
	}
	if p.OnDisk() || p.DirectFile() != nil {
		t.Error("staged on disk with no directory tier")
	}
	mem.Abort(p)
}

// TestCloseDiscardsStaged: Close discards the files staged on disk that
// were neither published nor discarded: a clean stop leaves no temp file
// in the tier.
func TestCloseDiscardsStaged(t *testing.T) {
	dir := t.TempDir()
	s := buildStack(t, StackConfig{}, MemConfig{Capacity: 64 << 20}, DirConfig{Kind: "nvme", Dir: dir})
	p, err := s.CreateOnDisk(format.FileKey("m", "left.bin.tmp"))
	if err != nil {
		t.Fatal(err)
	}
	writeDirect(t, p, bytes.Repeat([]byte{7}, 4096))
	staged := p.w.(*diskWriter).TempName()
	p.Park()
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(staged); !os.IsNotExist(err) {
		t.Errorf("a staged file outlived Close: %v", err)
	}
}
