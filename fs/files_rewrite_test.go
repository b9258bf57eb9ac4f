package fs

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// replacedSince waits, bounded, until the mount has sent more than n
// notifications of replaced Files (notifyReplaced, sent as the close that
// publishes returns), so that the kernel's entry of the old version is
// gone before the test looks the name up.
func (m *testMount) replacedSince(t *testing.T, n int64) {
	t.Helper()
	for i := 0; m.srv.state.namesReplaced.Load() <= n; i++ {
		if i == 1000 {
			t.Fatal("no notification after the publishing close")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestFilesRewrite: a published File of a files model opened for writing
// while the kernel has its entry cached (the usual case: any stat or open
// before) is a new version, as a create over it is. O_TRUNC starts it
// empty (`echo x > f`); an append or an O_RDWR write in place starts from
// the published bytes (`echo x >> f`, whose shell closes the first
// descriptor before it writes); a reader that opened the old version goes
// on reading it, another process reads the old one until the writer's
// close publishes; an open for writing that writes nothing publishes
// nothing. Before, every one of these opens was EACCES (or EIO with a
// reader open).
func TestFilesRewrite(t *testing.T) {
	m := newMount(t, Options{})
	m.model(t, "eng", "files")
	p := m.path("eng", "conf.txt")
	read := func() string {
		t.Helper()
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	sh := func(script string) {
		t.Helper()
		n := m.srv.state.namesReplaced.Load()
		if out, err := exec.Command("sh", "-c", script, "sh", p).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", script, err, out)
		}
		m.replacedSince(t, n)
	}
	if err := os.WriteFile(p, []byte("v1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	old, err := os.Open(p) // a reader of v1, with the kernel's passthrough backing
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	sh(`echo v2 > "$1"`)
	if got := read(); got != "v2\n" {
		t.Fatalf("after echo >: %q", got)
	}
	sh(`echo more >> "$1"`)
	if got := read(); got != "v2\nmore\n" {
		t.Fatalf("after echo >>: %q", got)
	}
	if b, err := io.ReadAll(old); err != nil || string(b) != "v1\n" {
		t.Errorf("reader of the first version: %q, %v", b, err)
	}

	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatalf("open O_RDWR: %v", err)
	}
	replaced := m.srv.state.namesReplaced.Load()
	if _, err := f.WriteAt([]byte("V"), 0); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cat", p).CombinedOutput(); err != nil || string(out) != "v2\nmore\n" {
		t.Errorf("another process while the writer has it open: %q, %v", out, err)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	m.replacedSince(t, replaced)
	if got := read(); got != "V2\nmore\n" {
		t.Fatalf("after a write in place: %q", got)
	}

	var before, after syscall.Stat_t
	m.noFilesWritten()
	if err := syscall.Stat(p, &before); err != nil {
		t.Fatal(err)
	}
	f, err = os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if st, ok := m.noFilesWritten(); !ok {
		t.Fatalf("a new version outlived its last descriptor: %s", st)
	}
	if err := syscall.Stat(p, &after); err != nil {
		t.Fatal(err)
	}
	if after.Ino != before.Ino || read() != "V2\nmore\n" {
		t.Errorf("an open for writing that wrote nothing published a version: inode %d -> %d", before.Ino, after.Ino)
	}
}

// TestFilesFsyncWriteOn: in a files model a program that writes, fsyncs
// and writes on (a log, a journal) keeps writing its file: each fsync
// publishes the bytes so far as a version, durable, that other processes
// read; the next close or fsync publishes the next one; nothing written
// after an fsync is lost, and the close returns 0. Before, the fsync
// ended the file: the close returned EPERM and what followed the fsync
// was gone.
func TestFilesFsyncWriteOn(t *testing.T) {
	m := newMount(t, Options{})
	m.model(t, "eng", "files")
	p := m.path("eng", "run.log")
	other := func() string {
		t.Helper()
		out, err := exec.Command("cat", p).CombinedOutput()
		if err != nil {
			return "error: " + string(out)
		}
		return string(out)
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"one\n", "two\n"} {
		if _, err := f.WriteString(line); err != nil {
			t.Fatal(err)
		}
		n := m.srv.state.namesReplaced.Load()
		if err := f.Sync(); err != nil {
			t.Fatalf("fsync: %v", err)
		}
		if line == "two\n" {
			m.replacedSince(t, n)
		}
	}
	if got := other(); got != "one\ntwo\n" {
		t.Errorf("another process after two fsyncs: %q", got)
	}
	if err := f.Sync(); err != nil { // nothing new: no new version
		t.Fatalf("fsync with nothing written: %v", err)
	}
	if _, err := f.WriteString("three\n"); err != nil {
		t.Fatal(err)
	}
	if got := other(); got != "one\ntwo\n" {
		t.Errorf("another process before the close: %q", got)
	}
	n := m.srv.state.namesReplaced.Load()
	if err := f.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	m.replacedSince(t, n)
	if got := other(); got != "one\ntwo\nthree\n" {
		t.Errorf("after the close: %q", got)
	}
	if st, ok := m.noFilesWritten(); !ok {
		t.Errorf("the log outlived its last descriptor: %s", st)
	}
}

// TestFilesTruncate: truncate(2) of a published File of a files model
// (by path, no descriptor) publishes a new version of the size asked,
// cut or grown with zeros, or empty; the same size changes nothing.
// Before, it was EPERM.
func TestFilesTruncate(t *testing.T) {
	m := newMount(t, Options{})
	m.model(t, "eng", "files")
	p := m.path("eng", "state")
	if err := os.WriteFile(p, []byte("0123456789"), 0o644); err != nil {
		t.Fatal(err)
	}
	for i, c := range []struct {
		size int64
		want string
	}{{4, "0123"}, {6, "0123\x00\x00"}, {6, "0123\x00\x00"}, {0, ""}} {
		n := m.srv.state.namesReplaced.Load()
		if err := os.Truncate(p, c.size); err != nil {
			t.Fatalf("truncate to %d: %v", c.size, err)
		}
		if i == 2 { // the size it has: no new version
			if m.srv.state.namesReplaced.Load() != n {
				t.Error("a truncate to the size the file has published a version")
			}
		} else {
			m.replacedSince(t, n)
		}
		if out, err := exec.Command("cat", p).Output(); err != nil || string(out) != c.want {
			t.Errorf("after truncate to %d, another process reads %q, %v; want %q", c.size, out, err, c.want)
		}
	}
	if st, ok := m.noFilesWritten(); !ok {
		t.Errorf("a version outlived its truncate: %s", st)
	}
}

// TestFilesUnlinkRenameWhileWriting: a file whose writer fsynced it (so
// a version of it is published) and goes on writing is gone at its
// unlink, and moves at its rename, as on a local disk: no published
// version stays behind under the old name. Before, the fsync's version
// stayed, and SQLite, which fsyncs its journal and unlinks it at each
// commit, found it again as a hot journal and rolled its commits back.
func TestFilesUnlinkRenameWhileWriting(t *testing.T) {
	m := newMount(t, Options{})
	m.model(t, "eng", "files")
	journal, log, moved := m.path("eng", "db-journal"), m.path("eng", "app.log"), m.path("eng", "app.log.1")
	gone := func(p string) {
		t.Helper()
		if out, err := exec.Command("stat", p).CombinedOutput(); err == nil {
			t.Errorf("%s is there for another process:\n%s", p, out)
		}
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s is there for its writer: %v", p, err)
		}
	}
	j := createSynced(t, journal, "pages")
	if err := os.Remove(journal); err != nil {
		t.Fatalf("unlink: %v", err)
	}
	gone(journal)
	j.Close()
	gone(journal)

	l := createSynced(t, log, "one\n")
	if err := os.Rename(log, moved); err != nil {
		t.Fatalf("rename: %v", err)
	}
	l.WriteString("two\n")
	if err := l.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	gone(log)
	if out, err := exec.Command("cat", moved).Output(); err != nil || string(out) != "one\ntwo\n" {
		t.Errorf("the renamed log: %q, %v", out, err)
	}
}

// TestFilesAppendLoop: a process that opens a file of a files model for
// appending again and again (a logger that opens, appends and closes per
// line; a probe that opens for writing and writes nothing) never sees
// ESTALE and loses no line. Before, an open whose lookup still found the
// last version being written (its release not yet done) met ESTALE there
// and again on the published file, and the second reached the caller.
func TestFilesAppendLoop(t *testing.T) {
	m := newMount(t, Options{})
	m.model(t, "eng", "files")
	p := m.path("eng", "app.log")
	if err := os.WriteFile(p, []byte("start\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	want := "start\n"
	for i := range 300 {
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatalf("open %d: %v", i, err)
		}
		if i%3 != 0 {
			line := fmt.Sprintf("line %d\n", i)
			if _, err := f.WriteString(line); err != nil {
				t.Fatalf("append %d: %v", i, err)
			}
			want += line
		}
		if err := f.Close(); err != nil {
			t.Fatalf("close %d: %v", i, err)
		}
	}
	if got, err := os.ReadFile(p); err != nil || string(got) != want {
		t.Errorf("the log: %d bytes, %v; want %d\n%s", len(got), err, len(want), got)
	}
}

// TestFilesTouch: `touch -d` of a published File of a files model (which
// opens it for writing and sets its times through the descriptor) sets
// the published file's mtime, at once and for good, and publishes no new
// version of bytes that did not change. Before this the time was lost:
// the unchanged version carrying it was dropped.
func TestFilesTouch(t *testing.T) {
	m := newMount(t, Options{})
	m.model(t, "eng", "files")
	p := m.path("eng", "stamp")
	if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	var before syscall.Stat_t
	if err := syscall.Stat(p, &before); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("touch", "-d", "2020-01-01T00:00:00Z", p).CombinedOutput(); err != nil {
		t.Fatalf("touch -d: %v\n%s", err, out)
	}
	want := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	if fi, err := os.Stat(p); err != nil || !fi.ModTime().Equal(want) {
		t.Errorf("mtime after touch -d: %v, %v; want %v", fi.ModTime(), err, want)
	}
	if st, ok := m.noFilesWritten(); !ok {
		t.Fatalf("the touch's version outlived it: %s", st)
	}
	var after syscall.Stat_t
	if err := syscall.Stat(p, &after); err != nil || after.Ino != before.Ino || time.Unix(after.Mtim.Unix()).UTC() != want {
		t.Errorf("after the release: inode %d -> %d, mtime %v, %v", before.Ino, after.Ino, time.Unix(after.Mtim.Unix()), err)
	}
}

// createSynced creates p, writes data and fsyncs it (which publishes a
// version of a files model's File), and returns the open file.
func createSynced(t *testing.T, p, data string) *os.File {
	t.Helper()
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	return f
}
