package fs

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/pkg/xattr"
	"github.com/ucmfs/ucmfs/store"
	"golang.org/x/sys/unix"
)

// TestFilesDirRename: rename(2) of a directory of a files model moves it
// with everything beneath it (before: EXDEV): the files' bytes under the
// new paths, none under the old, its empty subdirectories and its pins; a
// descriptor open on a directory beneath it (a working directory) goes on
// working there, an open file goes on reading; an empty directory is
// replaced, a non-empty one is ENOTEMPTY, a file ENOTDIR,
// RENAME_NOREPLACE over a directory EEXIST; a file being written beneath
// it makes it EBUSY until published.
func TestFilesDirRename(t *testing.T) {
	m := newMount(t, Options{})
	m.model(t, "eng", "files")
	p := func(rel string) string { return m.path("eng", rel) }
	for _, d := range []string{"d/sub/deep", "d/empty", "free"} {
		if err := os.MkdirAll(p(d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{"a.bin": "page a", "sub/b.bin": "page b", "sub/deep/c.bin": "page c", "config.json": "{}"}
	for rel, body := range files {
		if err := os.WriteFile(p("d/"+rel), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := xattr.Set(p("d/sub"), "user.ucm.pinned", []byte("1")); err != nil {
		t.Fatal(err)
	}
	dirfd, err := unix.Open(p("d/sub"), unix.O_DIRECTORY|unix.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(dirfd)
	open, err := os.Open(p("d/a.bin"))
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()

	// unix.Rename: Go's os.Rename refuses an existing directory itself.
	if err := unix.Rename(p("d"), p("free")); err != nil {
		t.Fatalf("rename of a directory over an empty one: %v", err)
	}
	for rel, body := range files {
		if got, err := os.ReadFile(p("free/" + rel)); err != nil || string(got) != body {
			t.Errorf("free/%s: %q, %v; want %q", rel, got, err, body)
		}
	}
	if _, err := os.Stat(p("d")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the old name: %v", err)
	}
	if fi, err := os.Stat(p("free/empty")); err != nil || !fi.IsDir() {
		t.Errorf("an empty subdirectory moved: %v", err)
	}
	if v, err := xattr.Get(p("free/sub"), "user.ucm.pinned"); err != nil || string(v) != "1" {
		t.Errorf("the pin of a moved directory: %q, %v", v, err)
	}
	// The descriptor of d/sub is now free/sub's, as on a local disk.
	buf := make([]byte, 16)
	if fd, err := unix.Openat(dirfd, "b.bin", unix.O_RDONLY, 0); err != nil {
		t.Errorf("openat through a moved directory: %v", err)
	} else {
		n, _ := unix.Read(fd, buf)
		unix.Close(fd)
		if string(buf[:n]) != "page b" {
			t.Errorf("openat through a moved directory read %q", buf[:n])
		}
	}
	// Its listing, first read after the move, is the directory's.
	names := make([]byte, 4096)
	if n, err := unix.Getdents(dirfd, names); err != nil || !bytes.Contains(names[:n], []byte("b.bin")) {
		t.Errorf("listing through a moved directory's descriptor: %d bytes, %v; no b.bin", n, err)
	}
	if err := unix.Mkdirat(dirfd, "made", 0o755); err != nil {
		t.Errorf("mkdirat through a moved directory: %v", err)
	} else if _, err := os.Stat(p("free/sub/made")); err != nil {
		t.Errorf("a directory made through the moved one: %v", err)
	}
	// A directory made under the old name is another one, with a number
	// of its own (one number for two live directories is a loop to find,
	// du and rsync).
	if err := os.Mkdir(p("d"), 0o755); err != nil {
		t.Errorf("mkdir of the old name: %v", err)
	} else {
		var moved, made unix.Stat_t
		if err := unix.Stat(p("free"), &moved); err != nil {
			t.Fatal(err)
		}
		if err := unix.Stat(p("d"), &made); err != nil {
			t.Fatal(err)
		}
		if moved.Ino == made.Ino {
			t.Errorf("the moved directory and a new one of its old name have one number, %d", moved.Ino)
		}
		if ents, err := os.ReadDir(p("d")); err != nil || len(ents) != 0 {
			t.Errorf("the new directory of the old name holds %d entries, %v", len(ents), err)
		}
		if err := os.Remove(p("d")); err != nil {
			t.Errorf("rmdir of the new directory: %v", err)
		}
	}
	if n, err := open.ReadAt(buf, 0); string(buf[:n]) != "page a" {
		t.Errorf("an open file of the moved directory read %q, %v", buf[:n], err)
	}
	if fi, err := open.Stat(); err != nil || fi.Size() != int64(len("page a")) {
		t.Errorf("fstat of an open file of the moved directory: %v", err)
	}
	if n, err := unix.Fgetxattr(int(open.Fd()), "user.ucm.state", buf); err != nil || n == 0 {
		t.Errorf("fgetxattr of an open file of the moved directory: %v", err)
	}

	if err := os.WriteFile(p("other.bin"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(p("full/x"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		to    string
		flags uint
		want  error
	}{
		{"full", 0, unix.ENOTEMPTY},
		{"other.bin", 0, unix.ENOTDIR},
		{"full/x", unix.RENAME_NOREPLACE, unix.EEXIST},
		{"free/sub/into", 0, unix.EINVAL},
	} {
		err := unix.Renameat2(unix.AT_FDCWD, p("free"), unix.AT_FDCWD, p(c.to), c.flags)
		if !errors.Is(err, c.want) {
			t.Errorf("rename to %s (flags %d): %v, want %v", c.to, c.flags, err, c.want)
		}
	}

	w, err := os.Create(p("free/sub/deep/w.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(p("free"), p("busy")); !errors.Is(err, unix.EBUSY) {
		t.Errorf("rename while a file is written beneath: %v, want EBUSY", err)
	}
	w.Close() // it publishes at its RELEASE, after close returns: the move waits for it
	if err := unix.Rename(p("free"), p("busy")); err != nil {
		t.Fatalf("rename once the file beneath is closed: %v", err)
	}
	if got, err := os.ReadFile(p("busy/sub/deep/c.bin")); err != nil || string(got) != "page c" {
		t.Errorf("after the second move: %q, %v", got, err)
	}
}

// TestFilesDirRenameBound: a directory with more files than a move in
// place takes is EXDEV, with nothing moved (mv copies it then).
func TestFilesDirRenameBound(t *testing.T) {
	m := newMount(t, Options{})
	m.model(t, "eng", "files")
	big := m.path("eng", "big")
	if err := os.Mkdir(big, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range store.MaxDirMoveFiles + 1 {
		if err := os.WriteFile(filepath.Join(big, fmt.Sprintf("p%05d", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.Rename(big, m.path("eng", "big2")); !errors.Is(err, unix.EXDEV) {
		t.Fatalf("rename of a directory past the bound: %v, want EXDEV", err)
	}
	ents, err := os.ReadDir(big)
	if err != nil || len(ents) != store.MaxDirMoveFiles+1 || !strings.HasPrefix(ents[0].Name(), "p") {
		t.Errorf("after the refused move: %d entries, %v", len(ents), err)
	}
	if _, err := os.Stat(m.path("eng", "big2")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the target of a refused move: %v", err)
	}
}

// TestFilesMoveAtQuota: a model at its quota still renames its files and
// directories, as a local disk needs no room for a rename (before: the
// move's copy was charged, EDQUOT); a new file past the quota is still
// EDQUOT.
func TestFilesMoveAtQuota(t *testing.T) {
	m := newMount(t, Options{})
	m.model(t, "eng", "files")
	p := func(rel string) string { return m.path("eng", rel) }
	if err := os.MkdirAll(p("d/sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	page := make([]byte, 64<<10)
	for _, rel := range []string{"a.bin", "d/b.bin", "d/sub/c.bin"} {
		if err := os.WriteFile(p(rel), page, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := xattr.Set(p(""), "user.ucm.quota", []byte(fmt.Sprint(3*len(page)+1000))); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(p("a.bin"), p("d/a.bin")); err != nil {
		t.Errorf("rename of a file at the quota: %v", err)
	}
	if err := unix.Rename(p("d"), p("e")); err != nil {
		t.Errorf("rename of a directory at the quota: %v", err)
	}
	for _, rel := range []string{"e/a.bin", "e/b.bin", "e/sub/c.bin"} {
		if got, err := os.ReadFile(p(rel)); err != nil || len(got) != len(page) {
			t.Errorf("%s after the moves: %d bytes, %v", rel, len(got), err)
		}
	}
	if err := os.WriteFile(p("new.bin"), page, 0o644); !errors.Is(err, unix.EDQUOT) {
		t.Errorf("a new file past the quota: %v, want EDQUOT", err)
	}
}

// TestFilesDirMoveReaders: readers of the files of a directory that is
// renamed back and forth never read wrong bytes nor list part of a
// directory, and once the renames end every file reads whole at once
// under the name the directory has.
// Before, a lookup while a move was half done cached a miss in the
// directory's node, which the kernel moves with the directory: the file
// was then missing for the negative timeout after the move. Later, about
// 1 run in 100 each: a write-back of a file the move took away made its
// old directory again on the tier (the next move onto that name failed
// ENOTEMPTY), and a file node the kernel kept under a name whose entry
// in go-fuse's tree a later lookup gave another node still served the
// path it left (an open right after the moves failed ENOENT).
func TestFilesDirMoveReaders(t *testing.T) {
	m := newMount(t, Options{})
	m.model(t, "eng", "files")
	p := func(rel string) string { return m.path("eng", rel) }
	const files = 40
	body := func(i int) []byte { return bytes.Repeat([]byte{byte(i)}, 16<<10) }
	for i := range files {
		if err := os.MkdirAll(p(fmt.Sprintf("a/s%d", i%4)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p(fmt.Sprintf("a/s%d/f%d.bin", i%4, i)), body(i), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	// loop runs body in a goroutine of its own until done is closed.
	loop := func(body func()) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
					body()
				}
			}
		}()
	}
	var wrong, partial atomic.Int64
	for range 3 { // readers: a file reads whole, or is elsewhere
		loop(func() {
			for i := range files {
				for _, d := range []string{"a", "b"} {
					got, err := os.ReadFile(p(fmt.Sprintf("%s/s%d/f%d.bin", d, i%4, i)))
					if err == nil && !bytes.Equal(got, body(i)) {
						wrong.Add(1)
					}
				}
			}
		})
	}
	loop(func() { // a lister: a listing is whole, or the directory is elsewhere
		for _, d := range []string{"a", "b"} {
			ents, err := os.ReadDir(p(d + "/s1"))
			if err == nil && len(ents) != files/4 {
				partial.Add(1)
			}
		}
	})
	at, other := "a", "b"
	for range 100 {
		if err := unix.Rename(p(at), p(other)); err != nil {
			close(done)
			wg.Wait()
			t.Fatalf("rename %s to %s: %v", at, other, err)
		}
		at, other = other, at
	}
	close(done)
	wg.Wait()
	if n := wrong.Load(); n != 0 {
		t.Errorf("%d reads returned wrong bytes", n)
	}
	if n := partial.Load(); n != 0 {
		t.Errorf("%d listings were partial", n)
	}
	for i := range files {
		if got, err := os.ReadFile(p(fmt.Sprintf("%s/s%d/f%d.bin", at, i%4, i))); err != nil || !bytes.Equal(got, body(i)) {
			t.Errorf("f%d right after the moves: %d bytes, %v", i, len(got), err)
		}
	}
}

// TestFilesMoveKeepsPin: a file a user pinned (user.ucm.pinned) is still
// pinned under its new name after a rename of it or of its directory, as
// extended attributes go with a renamed file on a local disk (before: the
// pin stayed behind with the old name). A file pinned by its directory's
// pin only is not pinned by itself after moving out.
func TestFilesMoveKeepsPin(t *testing.T) {
	m := newMount(t, Options{})
	m.model(t, "eng", "files")
	p := func(rel string) string { return m.path("eng", rel) }
	for _, d := range []string{"d", "pd", "out"} {
		if err := os.Mkdir(p(d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, rel := range []string{"a.bin", "pd/b.bin"} {
		if err := os.WriteFile(p(rel), []byte("kv"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := xattr.Set(p("a.bin"), "user.ucm.pinned", []byte("1")); err != nil {
		t.Fatal(err)
	}
	if err := xattr.Set(p("pd"), "user.ucm.pinned", []byte("1")); err != nil {
		t.Fatal(err)
	}
	pinned := func(rel string) string {
		v, err := xattr.Get(p(rel), "user.ucm.pinned")
		if err != nil {
			return err.Error()
		}
		return string(v)
	}
	if err := os.Rename(p("a.bin"), p("d/a.bin")); err != nil {
		t.Fatal(err)
	}
	if got := pinned("d/a.bin"); got != "1" {
		t.Errorf("pin of a renamed file: %s, want 1", got)
	}
	if err := unix.Rename(p("d"), p("e")); err != nil {
		t.Fatal(err)
	}
	if got := pinned("e/a.bin"); got != "1" {
		t.Errorf("pin of a file of a renamed directory: %s, want 1", got)
	}
	if err := os.Rename(p("pd/b.bin"), p("out/b.bin")); err != nil {
		t.Fatal(err)
	}
	if got := pinned("out/b.bin"); got != "0" {
		t.Errorf("pin of a file moved out of a pinned directory: %s, want 0", got)
	}
}

// TestFilesMoveAcrossModels: a published file and a directory move from
// one files model to another (before: EXDEV, and mv's copy was in memory
// only while the durable original went), counted in the second model's
// quota (EDQUOT past it, nothing moved); a file being written, or a move
// into a model of another layout, is EXDEV.
func TestFilesMoveAcrossModels(t *testing.T) {
	m := newMount(t, Options{})
	m.model(t, "one", "files")
	m.model(t, "two", "files")
	m.model(t, "blocks", "ucmb")
	if err := os.MkdirAll(m.path("one", "d/sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	page := bytes.Repeat([]byte("kv"), 32<<10)
	for _, rel := range []string{"a.bin", "d/b.bin", "d/sub/c.bin"} {
		if err := os.WriteFile(m.path("one", rel), page, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Rename(m.path("one", "a.bin"), m.path("two", "a.bin")); err != nil {
		t.Errorf("rename of a file to another files model: %v", err)
	}
	if err := xattr.Set(m.path("two"), "user.ucm.quota", []byte(fmt.Sprint(2*len(page)))); err != nil {
		t.Fatal(err)
	}
	if err := unix.Rename(m.path("one", "d"), m.path("two", "d")); !errors.Is(err, unix.EDQUOT) {
		t.Errorf("rename of a directory past the other model's quota: %v, want EDQUOT", err)
	}
	if _, err := os.Stat(m.path("two", "d")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the target of the refused move: %v", err)
	}
	if err := xattr.Set(m.path("two"), "user.ucm.quota", []byte("0")); err != nil {
		t.Fatal(err)
	}
	if err := unix.Rename(m.path("one", "d"), m.path("two", "e")); err != nil {
		t.Errorf("rename of a directory to another files model: %v", err)
	}
	for _, rel := range []string{"a.bin", "e/b.bin", "e/sub/c.bin"} {
		if got, err := os.ReadFile(m.path("two", rel)); err != nil || !bytes.Equal(got, page) {
			t.Errorf("two/%s: %d bytes, %v", rel, len(got), err)
		}
	}
	for _, rel := range []string{"a.bin", "d"} {
		if _, err := os.Stat(m.path("one", rel)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("one/%s after the move: %v", rel, err)
		}
	}
	w, err := os.Create(m.path("one", "w.bin"))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := os.Rename(m.path("one", "w.bin"), m.path("two", "w.bin")); !errors.Is(err, unix.EXDEV) {
		t.Errorf("rename of a file being written to another model: %v, want EXDEV", err)
	}
	if err := unix.Rename(m.path("two", "e"), m.path("blocks", "e")); !errors.Is(err, unix.EXDEV) {
		t.Errorf("rename of a directory to a ucmb model: %v, want EXDEV", err)
	}
}
