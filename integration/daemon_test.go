package integration

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

const (
	readyWait = 60 * time.Second // a daemon must be ready by then
	exitWait  = 60 * time.Second // and gone this long after SIGTERM
)

// mountOpts describes one `ucmfs mount` run. Empty Mnt or Tier get fresh
// directories; Args are extra flags, after the test defaults (a 64 MiB
// memory tier in memDir, log level warn, one nvme tier at Tier) unless
// Bare is set, which gives Args alone; Env entries are added to the
// environment.
type mountOpts struct {
	Mnt, Tier string
	Bare      bool
	Args      []string
	Env       []string
}

// daemon is a `ucmfs mount` subprocess.
type daemon struct {
	t      testing.TB
	Mnt    string
	Tier   string
	cmd    *exec.Cmd
	out    *syncBuffer
	exited chan struct{}
	code   int // exit status, once exited is closed (-1: killed by a signal)
}

// syncBuffer collects the daemon's stderr.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startUCM starts `ucmfs mount` without waiting for readiness. Its
// cleanup stops the daemon and detaches a mount left behind.
func startUCM(t testing.TB, o mountOpts) *daemon {
	t.Helper()
	requireFUSE(t)
	dir := testDir(t)
	if o.Mnt == "" {
		o.Mnt = filepath.Join(dir, "mnt")
		os.Mkdir(o.Mnt, 0o755)
	}
	if o.Tier == "" {
		o.Tier = filepath.Join(dir, "tier")
	}
	args := []string{"mount"}
	if !o.Bare {
		args = append(args, "--memory", "64MiB", "--memory-dir", memDir, "--log-level", "warn", "--tier", "nvme:"+o.Tier)
	}
	args = append(append(args, o.Args...), o.Mnt)
	d := &daemon{t: t, Mnt: o.Mnt, Tier: o.Tier, out: &syncBuffer{}, exited: make(chan struct{})}
	d.cmd = exec.Command(ucmfsBin, args...)
	d.cmd.Env = append(os.Environ(), o.Env...)
	d.cmd.Stdout, d.cmd.Stderr = d.out, d.out
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		err := d.cmd.Wait()
		d.code = d.cmd.ProcessState.ExitCode()
		if err != nil && !errors.As(err, new(*exec.ExitError)) {
			d.code = -2
		}
		close(d.exited)
	}()
	t.Cleanup(d.cleanup)
	return d
}

// mountUCM starts `ucmfs mount` and waits until it is ready.
func mountUCM(t testing.TB, o mountOpts) *daemon {
	t.Helper()
	d := startUCM(t, o)
	if err := d.waitReady(); err != nil {
		t.Fatalf("ucmfs mount %s: %v\n%s", d.Mnt, err, d.out.String())
	}
	return d
}

// waitReady waits for the ready line and a readable MNT/.ucm/stats.
func (d *daemon) waitReady() error {
	deadline := time.Now().Add(readyWait)
	stats := filepath.Join(d.Mnt, ".ucm", "stats")
	for {
		select {
		case <-d.exited:
			return errors.New("the daemon exited before it was ready")
		default:
		}
		if strings.Contains(d.out.String(), "ucmfs: mounted on "+d.Mnt) {
			if _, err := os.ReadFile(stats); err == nil {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return errors.New("not ready in time")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// pid is the daemon's process id.
func (d *daemon) pid() int { return d.cmd.Process.Pid }

// alive reports whether the process is still running.
func (d *daemon) alive() bool {
	select {
	case <-d.exited:
		return false
	default:
		return true
	}
}

// wait waits for the process to exit and returns its status (-1 when a
// signal killed it).
func (d *daemon) wait() int {
	d.t.Helper()
	select {
	case <-d.exited:
		return d.code
	case <-time.After(exitWait):
		d.cmd.Process.Kill()
		<-d.exited
		d.t.Fatalf("ucmfs did not exit within %v\n%s", exitWait, d.out.String())
		return d.code
	}
}

// stop sends SIGTERM and returns the exit status.
func (d *daemon) stop() int {
	d.t.Helper()
	d.cmd.Process.Signal(syscall.SIGTERM)
	return d.wait()
}

// kill sends SIGKILL and waits; the mount is left dead (ENOTCONN).
func (d *daemon) kill() {
	d.t.Helper()
	d.cmd.Process.Kill()
	<-d.exited
}

// detach lazily unmounts a dead mount (umount -l).
func (d *daemon) detach() {
	d.t.Helper()
	if err := unix.Unmount(d.Mnt, unix.MNT_DETACH); err != nil {
		d.t.Fatalf("umount -l %s: %v", d.Mnt, err)
	}
}

func (d *daemon) cleanup() {
	if d.alive() {
		d.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-d.exited:
		case <-time.After(exitWait):
			d.t.Errorf("ucmfs ignored SIGTERM for %v; killing it", exitWait)
			d.cmd.Process.Kill()
			<-d.exited
		}
	}
	if isMounted(d.Mnt) {
		unix.Unmount(d.Mnt, unix.MNT_DETACH)
	}
	if d.t.Failed() {
		d.t.Logf("ucmfs output (%s):\n%s", d.Mnt, d.out.String())
	}
}

// path joins elements under the mount point.
func (d *daemon) path(elem ...string) string {
	return filepath.Join(append([]string{d.Mnt}, elem...)...)
}

// filesModel makes the model name on d's mount, of the files layout, and
// returns its path.
func filesModel(t testing.TB, d *daemon, name string) string {
	t.Helper()
	dir := d.path(name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Setxattr(dir, "user.ucm.layout", []byte("files"), 0); err != nil {
		t.Fatal(err)
	}
	return dir
}
