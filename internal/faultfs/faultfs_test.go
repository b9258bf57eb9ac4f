package faultfs_test

import (
	"bufio"
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/ucmfs/ucmfs/internal/faultfs"
)

// mountpoints lists the mount points in /proc/self/mounts.
func mountpoints(t *testing.T) []string {
	t.Helper()
	fh, err := os.Open("/proc/self/mounts")
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var out []string
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) > 1 {
			out = append(out, f[1])
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func writeFile(t *testing.T, name string, data []byte) {
	t.Helper()
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestPassThrough(t *testing.T) {
	backing := t.TempDir()
	fsys := faultfs.Mount(t, backing)
	mnt := fsys.Dir()

	if !slices.Contains(mountpoints(t), mnt) {
		t.Fatalf("%s is not in /proc/self/mounts", mnt)
	}
	if err := os.MkdirAll(filepath.Join(mnt, "m", "ab"), 0o755); err != nil {
		t.Fatal(err)
	}
	// Larger than one FUSE request, so the write and the read are split.
	data := make([]byte, 3<<20+17)
	for i := range data {
		data[i] = byte(rand.IntN(256))
	}
	name := filepath.Join(mnt, "m", "ab", "x.bin")
	writeFile(t, name, data)

	got, err := os.ReadFile(filepath.Join(backing, "m", "ab", "x.bin"))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("backing copy: %d bytes, err %v; want %d bytes", len(got), err, len(data))
	}
	got, err = os.ReadFile(name)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read through mount: %d bytes, err %v; want %d bytes", len(got), err, len(data))
	}
	st, err := os.Stat(name)
	if err != nil || st.Size() != int64(len(data)) {
		t.Fatalf("stat: %v, %v", st, err)
	}

	// A file written behind the mount's back is visible at once.
	writeFile(t, filepath.Join(backing, "m", "ab", "y.bin"), []byte("y"))
	ents, err := os.ReadDir(filepath.Join(mnt, "m", "ab"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"x.bin", "y.bin"}) {
		t.Fatalf("readdir = %v", names)
	}

	if err := unix.Setxattr(name, "user.ucm.test", []byte("v1"), 0); err != nil {
		t.Fatalf("setxattr: %v", err)
	}
	buf := make([]byte, 64)
	n, err := unix.Getxattr(name, "user.ucm.test", buf)
	if err != nil || string(buf[:n]) != "v1" {
		t.Fatalf("getxattr = %q, %v", buf[:n], err)
	}
	n, err = unix.Getxattr(filepath.Join(backing, "m", "ab", "x.bin"), "user.ucm.test", buf)
	if err != nil || string(buf[:n]) != "v1" {
		t.Fatalf("backing getxattr = %q, %v", buf[:n], err)
	}
	n, err = unix.Listxattr(name, buf)
	if err != nil || !slices.Contains(strings.Split(string(buf[:n]), "\x00"), "user.ucm.test") {
		t.Fatalf("listxattr = %q, %v", buf[:n], err)
	}

	var sfs unix.Statfs_t
	if err := unix.Statfs(mnt, &sfs); err != nil || sfs.Blocks == 0 {
		t.Fatalf("statfs: %+v, %v", sfs, err)
	}
	if err := os.Rename(name, filepath.Join(mnt, "m", "z.bin")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(mnt, "m", "z.bin")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(backing, "m", "z.bin")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("backing after remove: %v", err)
	}
}

func TestRenameNoReplace(t *testing.T) {
	backing := t.TempDir()
	fsys := faultfs.Mount(t, backing)
	a := filepath.Join(fsys.Dir(), "a")
	b := filepath.Join(fsys.Dir(), "b")
	writeFile(t, a, []byte("a"))
	writeFile(t, b, []byte("b"))

	err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_NOREPLACE)
	if !errors.Is(err, syscall.EEXIST) {
		t.Fatalf("renameat2 NOREPLACE onto an existing name = %v, want EEXIST", err)
	}
	if got, _ := os.ReadFile(filepath.Join(backing, "b")); string(got) != "b" {
		t.Fatalf("target changed to %q", got)
	}
	c := filepath.Join(fsys.Dir(), "c")
	if err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, c, unix.RENAME_NOREPLACE); err != nil {
		t.Fatalf("renameat2 NOREPLACE onto a free name: %v", err)
	}
	if got, _ := os.ReadFile(filepath.Join(backing, "c")); string(got) != "a" {
		t.Fatalf("renamed file holds %q", got)
	}
	if _, err := os.Stat(filepath.Join(backing, "a")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("source still there: %v", err)
	}
}

func TestUnmount(t *testing.T) {
	fsys := faultfs.Mount(t, t.TempDir())
	mnt := fsys.Dir()
	writeFile(t, filepath.Join(mnt, "f"), []byte("x"))
	if err := fsys.Unmount(); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(mountpoints(t), mnt) {
		t.Fatalf("%s still mounted", mnt)
	}
	if err := fsys.Unmount(); err != nil {
		t.Fatalf("second Unmount: %v", err)
	}
}

func TestUnmountWithOpenFile(t *testing.T) {
	fsys := faultfs.Mount(t, t.TempDir())
	mnt := fsys.Dir()
	fh, err := os.Create(filepath.Join(mnt, "open"))
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	if err := fsys.Unmount(); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(mountpoints(t), mnt) {
		t.Fatalf("%s still mounted", mnt)
	}
}

func TestCalls(t *testing.T) {
	fsys := faultfs.Mount(t, t.TempDir())
	mnt := fsys.Dir()
	before := fsys.Calls(faultfs.OpAny)
	if err := os.Mkdir(filepath.Join(mnt, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(mnt, "d", "f"), []byte("data"))
	if err := os.Rename(filepath.Join(mnt, "d", "f"), filepath.Join(mnt, "d", "g")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(mnt, "d", "g")); err != nil {
		t.Fatal(err)
	}
	for op, want := range map[faultfs.Op]int64{
		faultfs.OpMkdir:  1,
		faultfs.OpCreate: 1,
		faultfs.OpWrite:  1,
		faultfs.OpRename: 1,
		faultfs.OpUnlink: 1,
		faultfs.OpRmdir:  0,
	} {
		if got := fsys.Calls(op); got != want {
			t.Errorf("Calls(%v) = %d, want %d", op, got, want)
		}
	}
	if got := fsys.Calls(faultfs.OpAny) - before; got < 5 {
		t.Errorf("Calls(OpAny) grew by %d, want at least 5", got)
	}
}
