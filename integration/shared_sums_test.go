package integration

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/ucmfs/ucmfs/internal/faultfs"
)

// TestSharedTierSums: a shared tier whose filesystem keeps no xattrs
// (internal/faultfs answers ENOTSUP to every xattr call, as NFSv3 does)
// still checks the raw files of a files model: their CRC-32C is kept in
// sum files under .ucmfs-sums, so another host reading a file damaged on
// the share (same inode, same size, one byte changed) gets an error,
// never the damaged bytes, while an intact file reads exact.
func TestSharedTierSums(t *testing.T) {
	backing := sharedDir(t)
	ffs := faultfs.Mount(t, backing)
	ffs.Inject(faultfs.Fault{Op: faultfs.OpGetxattr, Errno: syscall.ENOTSUP})
	ffs.Inject(faultfs.Fault{Op: faultfs.OpSetxattr, Errno: syscall.ENOTSUP})
	o := sharedMount("nfs:"+ffs.Dir(), "--default-layout", "files")
	a := mountUCM(t, o)
	if err := os.MkdirAll(a.path("eng", "pages"), 0o755); err != nil {
		t.Fatal(err)
	}
	pages := map[string][]byte{}
	for i, name := range []string{"good.bin", "bad.bin"} {
		data := bytes.Repeat([]byte{byte(0x30 + i), 0x5a, byte(i)}, 1<<18)
		pages[name] = data
		p := a.path("eng", "pages", name)
		if err := os.WriteFile(p+".tmp", data, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(p+".tmp", p); err != nil {
			t.Fatal(err)
		}
	}
	flushAll(t, a)
	sums, _ := filepath.Glob(filepath.Join(backing, ".ucmfs-sums", "*", "*"))
	if len(sums) != 2 {
		t.Fatalf("sum files on the share: %q, want one for each of the 2 files", sums)
	}

	// Another host's view: a byte of bad.bin changes on the share, in
	// place (the inode and size stay).
	f, err := os.OpenFile(filepath.Join(backing, "eng", "pages", "bad.bin"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte{0xff}, 1000); err != nil {
		t.Fatal(err)
	}
	f.Close()
	b := mountUCM(t, o)
	got, err := os.ReadFile(b.path("eng", "pages", "good.bin"))
	if err != nil || !bytes.Equal(got, pages["good.bin"]) {
		t.Fatalf("intact file read on another host: %v (%d bytes, equal %v)", err, len(got), bytes.Equal(got, pages["good.bin"]))
	}
	for range 2 {
		got, err = os.ReadFile(b.path("eng", "pages", "bad.bin"))
		if err == nil {
			t.Fatalf("file damaged on the share read on another host: %d bytes, no error (damaged bytes served: %v)", len(got), !bytes.Equal(got, pages["bad.bin"]))
		}
	}

	// A removal takes the file's sum with it (bad.bin's went with its
	// quarantine).
	if err := os.Remove(a.path("eng", "pages", "good.bin")); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "no sum is left on the share once both files are gone", func() bool {
		left, _ := filepath.Glob(filepath.Join(backing, ".ucmfs-sums", "*", "*"))
		return len(left) == 0
	})
}
