package fs

import (
	"fmt"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// TestTmpfileLink: in a files model, open(dir, O_TMPFILE) makes a file
// no listing or lookup shows, linkat(AT_EMPTY_PATH) names it and its last
// close publishes it under that name; a link over an existing name is
// EEXIST, a tmpfile never linked leaves nothing, and O_TMPFILE in a ucmb
// model is EOPNOTSUPP.
func TestTmpfileLink(t *testing.T) {
	m := newMount(t, Options{})
	dir := m.path("llmd", "ab", "cd")
	if err := os.Mkdir(m.path("llmd"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Setxattr(m.path("llmd"), "user.ucm.layout", []byte("files"), 0); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := func() int {
		fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_WRONLY, 0o644)
		if err != nil {
			t.Fatalf("O_TMPFILE: %v", err)
		}
		return fd
	}
	fd := tmp()
	if _, err := unix.Write(fd, []byte("a block through a tmpfile")); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("a tmpfile is listed: %v", ents)
	}
	if err := unix.Linkat(fd, "", unix.AT_FDCWD, dir+"/blk.bin", unix.AT_EMPTY_PATH); err != nil {
		t.Fatalf("linkat: %v", err)
	}
	unix.Close(fd)
	if got, err := os.ReadFile(dir + "/blk.bin"); err != nil || string(got) != "a block through a tmpfile" {
		t.Errorf("the linked file reads %q, %v", got, err)
	}
	fd = tmp()
	unix.Write(fd, []byte("another"))
	if err := unix.Linkat(fd, "", unix.AT_FDCWD, dir+"/blk.bin", unix.AT_EMPTY_PATH); err != unix.EEXIST {
		t.Errorf("linkat over an existing name: %v, want EEXIST", err)
	}
	unix.Close(fd)
	fd = tmp()
	unix.Write(fd, []byte("never linked"))
	unix.Close(fd)
	if ents, _ := os.ReadDir(dir); len(ents) != 1 || ents[0].Name() != "blk.bin" {
		t.Errorf("after tmpfiles never linked the directory holds %v", ents)
	}
	if st, ok := m.noFilesWritten(); !ok {
		t.Fatalf("a tmpfile outlived its last descriptor: %s", st)
	}
	if got, _ := os.ReadFile(dir + "/blk.bin"); string(got) != "a block through a tmpfile" {
		t.Errorf("the file reads %q after a refused link", got)
	}
	if err := os.Mkdir(m.path("plain"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := unix.Open(m.path("plain"), unix.O_TMPFILE|unix.O_WRONLY, 0o644); err != unix.EOPNOTSUPP {
		t.Errorf("O_TMPFILE in a ucmb model: %v, want EOPNOTSUPP", err)
	}
}

// TestTmpfileLinkProcFd: the link an unprivileged process makes of its
// tmpfile, linkat of /proc/self/fd/N with AT_SYMLINK_FOLLOW (the example
// of open(2); AT_EMPTY_PATH needed CAP_DAC_READ_SEARCH before Linux
// 6.10), names it too. Until the writer's last close publishes it (the
// writer may still write) the name shows its file to the writer's process
// alone, as a file it writes under its final name does.
func TestTmpfileLinkProcFd(t *testing.T) {
	m := newMount(t, Options{})
	dir := m.path("llmd")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Setxattr(dir, "user.ucm.layout", []byte("files"), 0); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_WRONLY, 0o644)
	if err != nil {
		t.Fatalf("O_TMPFILE: %v", err)
	}
	unix.Write(fd, []byte("linked by its /proc name"))
	if err := unix.Linkat(unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", fd), unix.AT_FDCWD, dir+"/blk.bin", unix.AT_SYMLINK_FOLLOW); err != nil {
		t.Fatalf("linkat of /proc/self/fd: %v", err)
	}
	unix.Write(fd, []byte(", then written on"))
	var st unix.Stat_t
	if err := unix.Stat(dir+"/blk.bin", &st); err != nil || st.Size != int64(len("linked by its /proc name, then written on")) {
		t.Errorf("the writer's stat of the linked name before its last close: %d bytes, %v", st.Size, err)
	}
	if size, err := statSize(dir + "/blk.bin"); err == nil {
		t.Errorf("another process's stat of the linked name before the last close: %q, want ENOENT", size)
	}
	unix.Close(fd)
	if got, err := os.ReadFile(dir + "/blk.bin"); err != nil || string(got) != "linked by its /proc name, then written on" {
		t.Errorf("the linked file reads %q, %v", got, err)
	}
}
