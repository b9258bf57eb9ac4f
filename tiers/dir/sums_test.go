package dir

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/internal/blocktest"

	"github.com/ucmfs/ucmfs/tiers/tier"
)

// TestDirSums: on a tier that keeps no xattrs a file's CRC is read back
// from its sum file; a file replaced behind the tier's back (another
// inode) has an unknown CRC, not a wrong one; a removal takes the sum.
func TestDirSums(t *testing.T) {
	dir := t.TempDir()
	d, err := New(Config{Kind: "nvme", Dir: dir, Capacity: 1 << 30, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	d.noXattr.Store(true) // as when the filesystem refuses the CRC xattr
	k := format.FileKey("m", "a/page.bin")
	data := []byte("sixteen bytes!!!")
	blocktest.WriteFile(t, d, k, data)
	if crc, has, err := d.readCRC(k); err != nil || !has || crc != format.CRC32C(data) {
		t.Fatalf("CRC read back from the sum: %08x %v %v, want %08x", crc, has, err, format.CRC32C(data))
	}
	// fsck checks the bytes against the sum: damaged in place, they fail.
	p := filepath.Join(dir, k.Path())
	if err := checkRaw(d.Root(), k.Path(), true); err != nil {
		t.Fatalf("fsck of the intact file: %v", err)
	}
	if err := os.Chmod(p, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("S"), 0)
	f.Close()
	if err := checkRaw(d.Root(), k.Path(), true); err == nil {
		t.Fatal("fsck of a file damaged in place: no error")
	}
	// Another inode at the name, same size: the sum is not its.
	if err := os.WriteFile(p+".new", []byte("SIXTEEN BYTES!!!"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(p+".new", p); err != nil {
		t.Fatal(err)
	}
	if crc, has, err := d.readCRC(k); err != nil || has {
		t.Fatalf("CRC of a file replaced behind the tier: %08x %v %v, want unknown", crc, has, err)
	}
	if err := d.Remove(k); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, sumRel(k))); !os.IsNotExist(err) {
		t.Fatalf("sum after the removal: %v", err)
	}
	// Removing a whole model takes its files' sums.
	k2 := format.FileKey("m2", "p.bin")
	blocktest.WriteFile(t, d, k2, data)
	if err := d.RemoveModel("m2"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, sumRel(k2))); !os.IsNotExist(err) {
		t.Fatalf("sum after its model's removal: %v", err)
	}

	// A temporary sum a crash left is removed when the tier opens again.
	left := filepath.Join(dir, sumsDirName, "ab", tier.TmpPrefix+"sum-crash")
	if err := os.MkdirAll(filepath.Dir(left), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(left, []byte("ucmfs-sum1"), 0o600); err != nil {
		t.Fatal(err)
	}
	d.Close()
	d, err = New(Config{Kind: "nvme", Dir: dir, Capacity: 1 << 30, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if _, err := os.Stat(left); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a temporary sum left by a crash is still there 10 s after the start")
		}
	}
	for _, bad := range []string{"", "ucmfs-sum1 1 2 0000000g\n", "ucmfs-sum1 1 -2 00000000\n", "ucmfs-sum1 1 2 00000000", "x 1 2 00000000\n"} {
		if _, _, _, ok := parseSum([]byte(bad)); ok {
			t.Errorf("parseSum(%q) accepted", bad)
		}
	}
	if ino, size, crc, ok := parseSum([]byte("ucmfs-sum1 7 16 0000abcd\n")); !ok || ino != 7 || size != 16 || crc != 0xabcd {
		t.Errorf("parseSum of a good line: %d %d %08x %v", ino, size, crc, ok)
	}
}

// BenchmarkDirCommitSums times a publish onto a directory tier (create,
// write, commit with its CRC) of a 4 KiB page and a 2 MiB block, with
// the CRC in an xattr and in a sum file (a filesystem without xattrs).
func BenchmarkDirCommitSums(b *testing.B) {
	for _, size := range []int{4 << 10, 2 << 20} {
		data := make([]byte, size)
		crc := format.CRC32C(data)
		for _, sums := range []bool{false, true} {
			name := fmt.Sprintf("%dKiB/xattr", size>>10)
			if sums {
				name = fmt.Sprintf("%dKiB/sumfile", size>>10)
			}
			b.Run(name, func(b *testing.B) {
				d, err := New(Config{Kind: "nvme", Dir: b.TempDir(), Capacity: 1 << 40, Logger: slog.New(slog.DiscardHandler)})
				if err != nil {
					b.Fatal(err)
				}
				defer d.Close()
				d.noXattr.Store(sums)
				b.SetBytes(int64(size))
				for i := range b.N {
					w, err := d.Create(format.FileKey("m", fmt.Sprintf("p/%d.bin", i)))
					if err != nil {
						b.Fatal(err)
					}
					if _, err := w.Write(data); err != nil {
						b.Fatal(err)
					}
					if _, err := w.Commit(tier.CommitOptions{CRC: crc, HasCRC: true}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
