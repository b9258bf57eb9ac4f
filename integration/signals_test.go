package integration

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSighupFlushes: closing the terminal of a foreground daemon (SIGHUP)
// loses nothing SIGTERM keeps: the blocks still only in memory reach the
// tier, the mount goes away, the exit status is 0.
func TestSighupFlushes(t *testing.T) {
	d := mountUCM(t, mountOpts{Args: []string{"--dirty-expire", "1h"}}) // nothing is written back on its own
	os.Mkdir(d.path("m"), 0o755)
	ids := testIDs("sighup", 16)
	mustPy(t, append([]string{"put", d.Mnt, "m", "--seed", "21"}, ids...)...)
	if n := len(listBlocks(t, d.Tier, "m")); n != 0 {
		t.Fatalf("%d blocks on the tier before the signal, want 0 (dirty in memory)", n)
	}
	d.cmd.Process.Signal(syscall.SIGHUP)
	if code := d.wait(); code != 0 {
		t.Fatalf("SIGHUP: exit %d\n%s", code, d.out.String())
	}
	if isMounted(d.Mnt) {
		t.Fatal("still mounted after SIGHUP")
	}
	mustPy(t, append([]string{"verify", d.Tier, "m", "--seed", "21"}, ids...)...)
}

// TestShutdownWithoutStderr: `ucmfs mount ... 2>&1 | tee log`, then
// Ctrl-C: tee goes first, and the daemon's log lines then meet a pipe with
// no reader. Shutdown must still flush and unmount (a log line is never
// worth a dead mount).
func TestShutdownWithoutStderr(t *testing.T) {
	requireFUSE(t)
	dir := testDir(t)
	mnt, tier := dir+"/mnt", dir+"/tier"
	os.Mkdir(mnt, 0o755)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(ucmfsBin, "mount", "--memory", "64MiB", "--memory-dir", memDir, "--log-level", "info",
		"--dirty-expire", "1h", "--tier", "nvme:"+tier, mnt)
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		if isMounted(mnt) {
			syscall.Unmount(mnt, syscall.MNT_DETACH)
		}
	})
	lines := bufio.NewScanner(r)
	ready := false
	for !ready && lines.Scan() {
		ready = strings.Contains(lines.Text(), "ucmfs: mounted on "+mnt)
	}
	if !ready {
		t.Fatal("no ready line")
	}
	os.Mkdir(mnt+"/m", 0o755)
	ids := testIDs("epipe", 16)
	mustPy(t, append([]string{"put", mnt, "m", "--seed", "22"}, ids...)...)
	r.Close() // the reader of stderr is gone
	cmd.Process.Signal(os.Interrupt)
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("Ctrl-C with stderr gone: %v", err)
		}
	case <-time.After(exitWait):
		t.Fatalf("the daemon did not exit within %v", exitWait)
	}
	if isMounted(mnt) {
		t.Fatal("still mounted after Ctrl-C with stderr gone")
	}
	mustPy(t, append([]string{"verify", tier, "m", "--seed", "22"}, ids...)...)
}

// TestMemoryOverMachine: a memory tier larger than the machine's RAM and
// swap is refused at mount with a message that says what the machine has,
// and nothing is mounted.
func TestMemoryOverMachine(t *testing.T) {
	requireFUSE(t)
	dir := testDir(t)
	mnt := dir + "/mnt"
	os.Mkdir(mnt, 0o755)
	var total int64 // RAM and swap, in KiB
	meminfo, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(meminfo), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && (f[0] == "MemTotal:" || f[0] == "SwapTotal:") {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			total += n
		}
	}
	size := strconv.FormatInt(2*total/(1<<20)+1, 10) + "GiB"           // twice what the machine has
	ctx, cancel := context.WithTimeout(context.Background(), exitWait) // a daemon that mounts would stay
	defer cancel()
	out, err := exec.CommandContext(ctx, ucmfsBin, "mount", "--memory", size, "--memory-dir", memDir, "--tier", "nvme:"+dir+"/tier", mnt).CombinedOutput()
	t.Cleanup(func() {
		if isMounted(mnt) {
			syscall.Unmount(mnt, syscall.MNT_DETACH)
		}
	})
	if err == nil || !strings.Contains(string(out), "more than this machine has") {
		t.Fatalf("mount --memory %s: %v\n%s", size, err, out)
	}
	if isMounted(mnt) {
		t.Fatal("mounted anyway")
	}
}
