package fs

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/ucmfs/ucmfs/store"
)

// TestListingsBounded: another user opens one directory many times and
// reads each once, so that each holds the directory's listing. Past its
// share the read fails with EMFILE, the names held go back at each close,
// and root still lists (the bound is per user, then in all). The same
// for a shard directory of a ucmb model.
func TestListingsBounded(t *testing.T) {
	m := sharedMount(t, store.Options{})
	m.srv.state.listed.mu.Lock()
	m.srv.state.listed.max, m.srv.state.listed.perUser = 1000, 500
	m.srv.state.listed.mu.Unlock()
	openModel(t, m, "eng", "files")
	for i := range 100 {
		if err := os.WriteFile(m.path("eng", fmt.Sprintf("f%03d.bin", i)), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	k, d := testBlock(testModel, 7, 4096)
	if err := os.Mkdir(m.path(testModel), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := writeFile(m.keyPath(k), d); err != nil {
		t.Fatal(err)
	}
	shard := filepath.Dir(m.keyPath(k))
	script := `
import os, sys
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
print(len(os.listdir(sys.argv[1])))
`
	run := func(dir string, n int) string {
		cmd := exec.Command("/usr/bin/python3", "-c", script, dir, fmt.Sprint(n))
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: otherUID, Gid: otherGID}}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if got := run(m.path("eng"), 10); got != "5 Too many open files\n100" {
		t.Fatalf("10 open listings of 100 names with a share of 500: %q, want 5 then EMFILE, then all closed and listed again", got)
	}
	if names, err := os.ReadDir(m.path("eng")); err != nil || len(names) != 100 {
		t.Fatalf("root's listing: %d names, %v", len(names), err)
	}
	if got := run(shard, 1000); !strings.HasPrefix(got, "500 Too many open files") {
		t.Fatalf("open listings of a shard of 1 name: %q, want 500 then EMFILE", got)
	}
}
