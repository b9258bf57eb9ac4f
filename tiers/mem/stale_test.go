package mem_test

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ucmfs/ucmfs/internal/tiertest"
	"github.com/ucmfs/ucmfs/tiers/mem"
	"github.com/ucmfs/ucmfs/tiers/tier"
	"golang.org/x/sys/unix"
)

// mkStale makes a directory with a lock file and one block-like file.
func mkStale(t *testing.T, parent, name string, withLock bool) string {
	t.Helper()
	dir := filepath.Join(parent, name)
	if err := os.MkdirAll(filepath.Join(dir, "m", "00"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "m", "00", "x.bin"), make([]byte, 4096), 0o444); err != nil {
		t.Fatal(err)
	}
	if withLock {
		if err := os.WriteFile(filepath.Join(dir, ".ucmfs.lock"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

func TestMemRemovesStaleDirs(t *testing.T) {
	parent := shmDir(t)
	dead := mkStale(t, parent, "ucmfs-mem-2147483647-aaaa", true)
	noLock := mkStale(t, parent, "ucmfs-mem-2147483647-bbbb", false)
	deadNew := mkStale(t, parent, "ucmfs-new-2147483647-cccc", false)
	liveNew := mkStale(t, parent, fmt.Sprintf("ucmfs-new-%d-dddd", os.Getpid()), false)
	other := mkStale(t, parent, "not-ours", true)
	live := mkStale(t, parent, "ucmfs-mem-1-eeee", true)
	lf, err := os.OpenFile(filepath.Join(live, ".ucmfs.lock"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	if err := unix.Flock(int(lf.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	// A live tier in the same parent keeps its directory too.
	first := newMem(t, mem.Config{Capacity: 1 << 20, Dir: parent, Private: mem.PrivateOff})
	tiertest.Put(t, first, tiertest.Key("m", 1), []byte("keep"), tier.CommitOptions{})

	newMem(t, mem.Config{Capacity: 1 << 20, Dir: parent, Private: mem.PrivateOff})
	for _, d := range []string{dead, noLock, deadNew} {
		if exists(d) {
			t.Errorf("stale directory %s not removed", d)
		}
	}
	for _, d := range []string{live, liveNew, other, first.Dir()} {
		if !exists(d) {
			t.Errorf("directory %s of a live owner (or not ours) was removed", d)
		}
	}
	if string(tiertest.Read(t, first, tiertest.Key("m", 1))) != "keep" {
		t.Fatal("the live tier lost its file")
	}
}

// TestMemHelperProcess is the child of TestMemKill9: it opens a memory
// tier, writes a block, prints the tier's directory and waits to be killed.
func TestMemHelperProcess(t *testing.T) {
	parent := os.Getenv("UCMFS_MEM_CHILD_DIR")
	if parent == "" {
		t.Skip("run as a child of TestMemKill9")
	}
	m, err := mem.New(mem.Config{Capacity: 1 << 20, Dir: parent, Private: mem.PrivateOff})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	tiertest.Put(t, m, tiertest.Key("m", 1), tiertest.Payload(1, 100000), tier.CommitOptions{})
	fmt.Println(m.Dir())
	select {}
}

func TestMemKill9(t *testing.T) {
	parent := shmDir(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestMemHelperProcess$")
	cmd.Env = append(os.Environ(), "UCMFS_MEM_CHILD_DIR="+parent)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	line = strings.TrimSpace(line)
	if err != nil || !strings.HasPrefix(line, parent) {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child said %q, %v", line, err)
	}
	if err := cmd.Process.Signal(unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if !exists(filepath.Join(line, "m")) {
		t.Fatal("the killed daemon's directory is not there to clean")
	}
	newMem(t, mem.Config{Capacity: 1 << 20, Dir: parent, Private: mem.PrivateOff})
	if _, err := os.Stat(line); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("directory of the killed daemon %s left behind: %v", line, err)
	}
}
