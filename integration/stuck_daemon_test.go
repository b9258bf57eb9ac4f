package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ucmfs/ucmfs/internal/faultfs"
	"golang.org/x/sys/unix"
)

// TestStuckDaemonFreed: a daemon killed while one of its threads waits in
// the kernel cannot finish dying, and keeps its tiers' locks; the next
// `ucmfs mount` of the same tiers aborts its FUSE connection and starts
// (tiers/lock_stuck.go, docs/operations.md).
//
// The wait is made as it comes in use: a create in a directory holds the
// directory's lock while the daemon answers its lookup, which waits on a
// shared tier (a lookup internal/faultfs stalls); meanwhile a writer's
// close publishes a new version of another file of that directory, and
// the daemon's entry invalidation for it waits for the lock. Killed then,
// the daemon's thread waits for a create that only the dead daemon could
// answer.
func TestStuckDaemonFreed(t *testing.T) {
	requireFUSE(t)
	fusectl(t)
	dir := testDir(t)
	backing := filepath.Join(dir, "share")
	if err := os.Mkdir(backing, 0o700); err != nil {
		t.Fatal(err)
	}
	ffs := faultfs.Mount(t, backing)
	tier := filepath.Join(dir, "tier")
	// The shared tier first: a version fsynced is on it, in its index, and
	// a publish over it touches no file there.
	args := []string{"--memory", "64MiB", "--memory-dir", memDir, "--log-level", "warn", "--default-layout", "files",
		"--tier", "nfs:" + ffs.Dir(), "--tier", "nvme:" + tier}
	d := mountUCM(t, mountOpts{Bare: true, Args: args})
	root := d.path("m")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	writeSynced(t, filepath.Join(root, "x.bin"), "version 1")
	w, err := os.OpenFile(filepath.Join(root, "x.bin"), os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteString("version 2"); err != nil {
		t.Fatal(err)
	}
	ffs.Inject(faultfs.Fault{Op: faultfs.OpStat, Stall: true, PathContains: "new.bin"})
	created := make(chan error, 1)
	go func() {
		f, err := os.OpenFile(filepath.Join(root, "new.bin"), os.O_WRONLY|os.O_CREATE, 0o644)
		if err == nil {
			f.Close()
		}
		created <- err
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := ffs.WaitStalled(ctx, 1); err != nil {
		t.Fatalf("the create's lookup did not reach the shared tier: %v", err)
	}
	if err := w.Close(); err != nil { // publishes version 2
		t.Fatal(err)
	}
	pid := d.pid()
	waitFor(t, "a thread of the daemon waiting in an entry invalidation", func() bool {
		return len(tasksIn(pid, "fuse_reverse_inval_entry")) > 0
	})
	conn := fuseConn(t, d.Mnt)
	t.Cleanup(func() { // the daemon still stuck (the test failed): free it
		select {
		case <-d.exited:
		default:
			os.WriteFile(filepath.Join("/sys/fs/fuse/connections", conn, "abort"), []byte("1"), 0)
		}
	})
	if err := d.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	ffs.Clear() // the stalled lookup returns: the thread that made it exits
	waitFor(t, "the killed daemon a zombie with only its stuck thread", func() bool {
		select {
		case <-d.exited:
			t.Fatal("the killed daemon exited: it was not stuck")
		default:
		}
		all, stuck := tasksIn(pid, ""), tasksIn(pid, "fuse_reverse_inval_entry")
		return procState(pid) == 'Z' && len(stuck) > 0 && len(all) == len(stuck)
	})

	mnt2 := filepath.Join(dir, "mnt2")
	if err := os.Mkdir(mnt2, 0o755); err != nil {
		t.Fatal(err)
	}
	d2 := mountUCM(t, mountOpts{Mnt: mnt2, Bare: true, Args: args})
	if out := d2.out.String(); !strings.Contains(out, "died stuck in the kernel") {
		t.Errorf("the new daemon did not say it freed the tier: %s", out)
	}
	select {
	case <-d.exited:
	case <-time.After(exitWait):
		t.Fatal("the stuck daemon did not finish dying after its connection was aborted")
	}
	if err := <-created; err == nil {
		t.Error("the create the dead daemon never answered succeeded")
	}
	got, err := os.ReadFile(d2.path("m", "x.bin"))
	if err != nil || (string(got) != "version 1" && string(got) != "version 2") {
		t.Errorf("x.bin after the restart: %q, %v", got, err)
	}
	d.detach()
	if code := d2.stop(); code != 0 {
		t.Fatalf("SIGTERM: exit %d", code)
	}
}

// writeSynced writes data to a new file at p and fsyncs it.
func writeSynced(t *testing.T, p, data string) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
}

// fusectl mounts the fusectl filesystem at /sys/fs/fuse/connections
// unless it is there, and unmounts it at the end if it mounted it.
func fusectl(t *testing.T) {
	const dir = "/sys/fs/fuse/connections"
	if _, err := os.Stat(filepath.Join(dir, "..", "connections")); err != nil {
		t.Fatalf("no %s: %v", dir, err)
	}
	if mountedFS(dir) == "fusectl" {
		return
	}
	if err := unix.Mount("none", dir, "fusectl", 0, ""); err != nil {
		t.Fatalf("mount fusectl: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
}

// fuseConn is the number of the FUSE connection of the mount at mnt (its
// minor device number).
func fuseConn(t *testing.T, mnt string) string {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(mnt, &st); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(unix.Minor(st.Dev))
}

// mountedFS is the type of the filesystem mounted at dir, "" when none.
func mountedFS(dir string) string {
	b, _ := os.ReadFile("/proc/self/mounts")
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 2 && f[1] == dir {
			return f[2]
		}
	}
	return ""
}

// tasksIn lists the threads of pid other than its leader whose kernel
// stack holds fn (all of them for fn "").
func tasksIn(pid int, fn string) []string {
	ents, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	var out []string
	for _, e := range ents {
		if e.Name() == fmt.Sprint(pid) {
			continue
		}
		stack, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stack", pid, e.Name()))
		if err == nil && strings.Contains(string(stack), fn) {
			out = append(out, e.Name())
		}
	}
	return out
}

// procState is the state letter of pid in /proc/<pid>/stat, 0 if none.
func procState(pid int) byte {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	i := strings.LastIndexByte(string(b), ')')
	if err != nil || i < 0 || len(b) < i+3 {
		return 0
	}
	return b[i+2]
}

// waitFor polls cond until it holds, failing after a minute.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s after a minute", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
