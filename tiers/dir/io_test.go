package dir_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/internal/tiertest"
	"github.com/ucmfs/ucmfs/tiers/dir"
	"github.com/ucmfs/ucmfs/tiers/tier"
	"golang.org/x/sys/unix"
)

// exists reports whether p is there.
func exists(p string) bool { _, err := os.Stat(p); return err == nil }

func TestDirSync(t *testing.T) {
	d := newDir(t, dir.Config{Capacity: 1 << 20})
	key := tiertest.Key("m", 1)
	tiertest.Put(t, d, key, []byte("not yet durable"), tier.CommitOptions{})
	if err := d.Sync(key); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	if err := d.Sync(tiertest.Key("m", 2)); !errors.Is(err, tier.ErrNotFound) {
		t.Fatalf("Sync of an absent key: %v", err)
	}
	tiertest.Put(t, d, tiertest.Key("m", 3), []byte("durable"), tier.CommitOptions{Sync: true})
	if got, _ := os.ReadFile(filepath.Join(d.Dir(), tiertest.Key("m", 3).Path())); string(got) != "durable" {
		t.Fatalf("synced commit holds %q", got)
	}
}

func TestDirCRCXattr(t *testing.T) {
	d := newDir(t, dir.Config{Capacity: 1 << 20})
	with, without := tiertest.Key("m", 1), tiertest.Key("m", 2)
	tiertest.Put(t, d, with, []byte("payload"), tier.CommitOptions{CRC: 0x00c0ffee, HasCRC: true})
	tiertest.Put(t, d, without, []byte("payload"), tier.CommitOptions{})
	buf := make([]byte, 64)
	n, err := unix.Getxattr(filepath.Join(d.Dir(), with.Path()), "user.ucm.crc32c", buf)
	if errors.Is(err, unix.ENOTSUP) {
		t.Skip("filesystem without user xattrs")
	}
	if err != nil || string(buf[:n]) != "00c0ffee" {
		t.Fatalf("crc xattr %q, %v; want 00c0ffee", buf[:n], err)
	}
	if _, err := unix.Getxattr(filepath.Join(d.Dir(), without.Path()), "user.ucm.crc32c", buf); !errors.Is(err, unix.ENODATA) {
		t.Fatalf("file committed without CRC has the xattr: %v", err)
	}
}

func TestDirDirectIO(t *testing.T) {
	root := t.TempDir()
	if !directSupported(t, root) {
		t.Skip("the test directory's filesystem refuses O_DIRECT")
	}
	d := newDir(t, dir.Config{Dir: root, Capacity: 1 << 30, DirectIO: ptr(true)})
	cases := []struct {
		size   int
		chunks []int // Write sizes, repeated until size
	}{
		{0, []int{1}},
		{100, []int{100}},
		{4096, []int{4096}},
		{1 << 20, []int{1 << 20}},
		{1<<20 + 4096, []int{777}},
		{2<<20 + 64, []int{64, 2 << 20}},
		{3<<20 + 123, []int{1<<20 - 1, 3, 5000}},
		{5 << 20, []int{5 << 20}},
	}
	// Each case twice: from the payload as allocated, and from a copy at a
	// 4 KiB-aligned address, whose aligned chunks are written as they are
	// (the path of a copy between tiers, which reads into aligned buffers).
	for i := range 2 * len(cases) {
		c := cases[i%len(cases)]
		key := tiertest.Key("m", i)
		data := tiertest.Payload(uint64(i), c.size)
		if i >= len(cases) {
			data = append(alignedBuf(len(data)), data...)
		}
		w, err := d.Create(key)
		if err != nil {
			t.Fatal(err)
		}
		for off, j := 0, 0; off < len(data); j++ {
			n := min(c.chunks[j%len(c.chunks)], len(data)-off)
			if m, err := w.Write(data[off : off+n]); err != nil || m != n {
				t.Fatalf("write %d bytes: %d, %v", n, m, err)
			}
			off += n
		}
		info, err := w.Commit(tier.CommitOptions{})
		if err != nil || info.Size != int64(c.size) {
			t.Fatalf("commit of %d bytes: %+v %v", c.size, info, err)
		}
		got, err := os.ReadFile(filepath.Join(root, key.Path()))
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("O_DIRECT file of %d bytes: read %d bytes that differ, %v", c.size, len(got), err)
		}
	}
	// The descriptor handed out stays an ordinary one.
	w, err := d.Create(tiertest.Key("m", 100))
	if err != nil {
		t.Fatal(err)
	}
	w.Write(tiertest.Payload(1, 1<<20))
	if _, err := w.File().WriteAt([]byte("unaligned"), 1<<20); err != nil {
		t.Fatalf("pwrite through File after O_DIRECT writes: %v", err)
	}
	w.Abort()
}

// alignedBuf returns an empty slice with room for n bytes, starting at a
// 4 KiB boundary.
func alignedBuf(n int) []byte {
	b := make([]byte, n+4096)
	off := (4096 - int(uintptr(unsafe.Pointer(&b[0]))%4096)) % 4096
	return b[off : off : off+n]
}

// smallFS mounts a tmpfs of size bytes (root only) and returns its path.
func smallFS(t *testing.T, size string) string {
	root := t.TempDir()
	if err := unix.Mount("tmpfs", root, "tmpfs", 0, "size="+size); err != nil {
		t.Skipf("cannot mount a small tmpfs: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(root, unix.MNT_DETACH) })
	return root
}

func TestDirENOSPCIsErrFull(t *testing.T) {
	root := smallFS(t, "256k")
	d := newDir(t, dir.Config{Dir: root, Capacity: 64 << 20})
	w, err := d.Create(tiertest.Key("m", 1))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	_, err = w.Write(make([]byte, 1<<20))
	if !errors.Is(err, syscall.ENOSPC) || !errors.Is(err, tier.ErrFull) {
		t.Fatalf("write past a full filesystem: %v, want ENOSPC and ErrFull", err)
	}
	if d.Health() != dir.Up {
		t.Fatalf("a full filesystem is not a failing one: health %v", d.Health())
	}
}

func TestDirSharedAdopts(t *testing.T) {
	root := t.TempDir()
	a := newDir(t, dir.Config{Kind: "nfs", Dir: root, Capacity: 1 << 20})
	b := newDir(t, dir.Config{Kind: "nfs", Dir: root, Capacity: 1 << 20})
	key := tiertest.Key("m", 1)
	data := tiertest.Payload(1, 3000)
	tiertest.Put(t, a, key, data, tier.CommitOptions{CRC: 7, HasCRC: true})
	info, err := b.Stat(key)
	if err != nil || info.Size != 3000 {
		t.Fatalf("other daemon's Stat: %+v %v", info, err)
	}
	if crc, has, err := b.CRC(key); err != nil || !has || crc != 7 {
		t.Fatalf("other daemon's CRC: %08x %v %v", crc, has, err)
	}
	if u := b.Usage(); u.Files != 1 || u.Used != 3000 {
		t.Fatalf("adopted file not counted: %+v", u)
	}
	if !bytes.Equal(tiertest.Read(t, b, key), data) {
		t.Fatal("other daemon reads other bytes")
	}
	// A second copy from the other daemon is refused.
	if _, err := tiertestPut(b, key, []byte("again")); !errors.Is(err, tier.ErrExist) {
		t.Fatalf("second publish from another daemon: %v", err)
	}
	if err := b.Remove(key); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Open(key); !errors.Is(err, tier.ErrNotFound) {
		t.Fatalf("open of a file the other daemon removed: %v", err)
	}
	if u := a.Usage(); u.Files != 0 {
		t.Fatalf("vanished file still counted: %+v", u)
	}
}

func tiertestPut(tr tier.Tier, key format.Key, data []byte) (tier.Info, error) {
	w, err := tr.Create(key)
	if err != nil {
		return tier.Info{}, err
	}
	w.Write(data)
	return w.Commit(tier.CommitOptions{})
}

func TestDirRemoveModel(t *testing.T) {
	d := newDir(t, dir.Config{Capacity: 1 << 20})
	for i := 0; i < 20; i++ {
		tiertest.Put(t, d, tiertest.Key("a", i), []byte("aaaa"), tier.CommitOptions{})
		tiertest.Put(t, d, tiertest.Key("b", i), []byte("bb"), tier.CommitOptions{})
	}
	if err := d.RemoveModel("a"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(d.Dir(), "a")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("model directory left behind")
	}
	if u := d.Usage(); u.Files != 20 || u.Used != 40 {
		t.Fatalf("usage after RemoveModel: %+v", u)
	}
	if got := d.Models(); len(got) != 1 || got[0] != "b" {
		t.Fatalf("Models() = %v", got)
	}
	if err := d.RemoveModel("nothing-here"); err != nil {
		t.Fatalf("RemoveModel of an absent model: %v", err)
	}
	tiertest.Put(t, d, tiertest.Key("a", 0), []byte("again"), tier.CommitOptions{})
}

func TestDirSharedKeepsYoungTemps(t *testing.T) {
	root := t.TempDir()
	key := tiertest.Key("m", 1)
	shard := filepath.Join(root, "m", key.ID.Shard())
	os.MkdirAll(shard, 0o755)
	young := filepath.Join(shard, ".tmp-"+key.ID.String()+"-young")
	old := filepath.Join(shard, ".tmp-"+key.ID.String()+"-old")
	os.WriteFile(young, []byte("another daemon writing"), 0o644)
	os.WriteFile(old, []byte("crashed long ago"), 0o644)
	past := time.Now().Add(-2 * time.Hour)
	os.Chtimes(old, past, past)
	d := newDir(t, dir.Config{Kind: "nfs", Dir: root, Capacity: 1 << 20})
	waitScanned(t, d)
	if !exists(young) {
		t.Fatal("a young temp file in a shared directory was removed")
	}
	if exists(old) {
		t.Fatal("an hour-old temp file in a shared directory was kept")
	}
	if u := d.Usage(); u.Files != 0 {
		t.Fatalf("temp files indexed: %+v", u)
	}
}

// waitScanned waits for a shared tier's background scan.
func waitScanned(t testing.TB, d *dir.Tier) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); !d.Scanned(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the background scan did not end")
		}
	}
}
