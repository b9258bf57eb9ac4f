package fs

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ucmfs/ucmfs/store"
	"github.com/ucmfs/ucmfs/vfs"
)

// TestListingsBounded: another user opens one directory many times and
// reads each once, so that each holds the directory's listing. Past its
// share the read fails with EMFILE, the names held go back at each close,
// and root still lists (the bound is per user, then in all). The same
// for a shard directory of a ucmb model.
func TestListingsBounded(t *testing.T) {
	m := budgetMount(t, func(s *fsState) *vfs.UserBudget { return &s.listed }, 1000, 500, "f%03d.bin", 100)
	k, d := testBlock(testModel, 7, 4096)
	if err := os.Mkdir(m.path(testModel), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := writeFile(m.keyPath(k), d); err != nil {
		t.Fatal(err)
	}
	shard := filepath.Dir(m.keyPath(k))
	script := retryPy + `
fds, err = [], ""
for i in range(int(sys.argv[2])):
    fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.scandir(fd).__next__()   # reads the listing (a dup of fd)
    except OSError as e:
        err = e.strerror
        break
    fds.append(fd)
print(len(fds), err)
for fd in fds:
    os.close(fd)
print(len(retry(lambda: os.listdir(sys.argv[1]))))
`
	run := func(dir string, n int) string { return pythonAsOther(t, script, dir, fmt.Sprint(n)) }
	if got := run(m.path("eng"), 10); got != "5 Too many open files\n100" {
		t.Fatalf("10 open listings of 100 names with a share of 500: %q, want 5 then EMFILE, then all closed and listed again", got)
	}
	if names, err := os.ReadDir(m.path("eng")); err != nil || len(names) != 100 {
		t.Fatalf("root's listing: %d names, %v", len(names), err)
	}
	waitFreed(t, &m.srv.state.listed)
	if got := run(shard, 1000); !strings.HasPrefix(got, "500 Too many open files") {
		t.Fatalf("open listings of a shard of 1 name: %q, want 500 then EMFILE", got)
	}
}

// TestOpensBounded: another user opens many published files and holds
// them. Each open may hold a descriptor of the daemon, so past the
// user's share an open fails with EMFILE (before, 19,000 opens by one
// user took 19,000 of the daemon's 20,000 descriptors); the share comes
// back at each close, and root's opens go on.
func TestOpensBounded(t *testing.T) {
	m := budgetMount(t, func(s *fsState) *vfs.UserBudget { return &s.reading }, 100, 30, "f%02d.bin", 60)
	script := retryPy + `
fds, err = [], ""
for i in range(60):
    try:
        fds.append(os.open(os.path.join(sys.argv[1], "f%02d.bin" % (i % int(sys.argv[2]))), os.O_RDONLY))
    except OSError as e:
        err = e.strerror
        break
print(len(fds), err)
for fd in fds:
    os.close(fd)
print(len(retry(lambda: open(os.path.join(sys.argv[1], "f00.bin")).read())))
`
	run := func(distinct int) string { return pythonAsOther(t, script, m.path("eng"), fmt.Sprint(distinct)) }
	for _, distinct := range []int{60, 1} {
		waitFreed(t, &m.srv.state.reading)
		if got := run(distinct); got != "30 Too many open files\n1" {
			t.Fatalf("60 opens of %d files with a share of 30: %q, want 30, EMFILE, then an open after the closes", distinct, got)
		}
	}
	var held []*os.File
	for i := range 30 { // root's own share
		f, err := os.Open(m.path("eng", fmt.Sprintf("f%02d.bin", i)))
		if err != nil {
			t.Fatalf("root's open %d: %v", i, err)
		}
		held = append(held, f)
	}
	for _, f := range held {
		f.Close()
	}
}

// budgetMount is a sharedMount whose budget (of its state) has the
// bounds max and perUser, with a files model eng holding n files named
// by format name.
func budgetMount(t *testing.T, budget func(*fsState) *vfs.UserBudget, max, perUser int64, name string, n int) *testMount {
	t.Helper()
	m := sharedMount(t, store.Options{})
	b := budget(m.srv.state)
	b.SetBounds(max, perUser)
	openModel(t, m, "eng", "files")
	for i := range n {
		if err := os.WriteFile(m.path("eng", fmt.Sprintf(name, i)), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

// pythonAsOther runs script with args as another user (otherUID) and
// returns its output, trimmed.
func pythonAsOther(t *testing.T, script string, args ...string) string {
	t.Helper()
	cmd := exec.Command("/usr/bin/python3", append([]string{"-c", script}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: otherUID, Gid: otherGID}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return strings.TrimSpace(string(out))
}

// retryPy is the head of a Python script run as another user: imports,
// and retry, which calls fn until it does not fail with EMFILE, for up to
// 10 s: the kernel sends the RELEASE of a closed descriptor after close
// returns, so what a close gives back comes a moment later.
const retryPy = `
import errno, os, sys, time
def retry(fn):
    end = time.time() + 10
    while True:
        try:
            return fn()
        except OSError as e:
            if e.errno != errno.EMFILE or time.time() > end:
                raise
            time.sleep(0.01)
`

// waitFreed waits, for up to 10 s, until b holds nothing for another
// user: the RELEASEs of its closed descriptors come after its exit.
func waitFreed(t *testing.T, b *vfs.UserBudget) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		held := b.Held(otherUID)
		if held == 0 {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("another user still holds %d after its exit", held)
		}
	}
}

// TestHandlesBounded: what else another user may hold open counts as
// its open files too, EMFILE past its share: opens of .ucm/stats, which
// any user may read (each holds a snapshot), and open directories (each a
// handle of the daemon; a files model's directory or a shard keeps its
// listing in it).
func TestHandlesBounded(t *testing.T) {
	m := budgetMount(t, func(s *fsState) *vfs.UserBudget { return &s.reading }, 100, 30, "f%d.bin", 1)
	script := `
import os, sys
flags = os.O_RDONLY | (os.O_DIRECTORY if sys.argv[2] == "dir" else 0)
fds, err = [], ""
for i in range(60):
    try:
        fds.append(os.open(sys.argv[1], flags))
    except OSError as e:
        err = e.strerror
        break
print(len(fds), err)
`
	for _, c := range []struct{ path, kind string }{{m.path(".ucm", "stats"), "file"}, {m.path("eng"), "dir"}} {
		waitFreed(t, &m.srv.state.reading)
		if got := pythonAsOther(t, script, c.path, c.kind); got != "30 Too many open files" {
			t.Fatalf("60 opens of %s with a share of 30: %q", c.path, got)
		}
	}
}
