package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

const (
	readyWait = 60 * time.Second // a daemon must be ready by then
	exitWait  = 60 * time.Second // and gone this long after SIGTERM
	pollEvery = 2 * time.Millisecond
)

// daemon is one `ucmfs mount` subprocess. It outlives the benchmark that
// started it (a benchmark function runs once per b.N round), so it is not
// tied to a testing.TB: TestMain stops every daemon at the end.
type daemon struct {
	Mnt, Tier string
	args      []string // everything before the mount point

	mu     sync.Mutex // guards the fields below
	cmd    *exec.Cmd
	out    *syncBuffer
	exited chan struct{}
	err    error // how the process ended, once exited is closed
}

// running lists every daemon newDaemon described, for stopAll.
var running struct {
	sync.Mutex
	all []*daemon
}

// newDaemon describes (does not start) a daemon mounting mnt, over one
// nvme tier at tier and a memory tier of size mem ("2GiB"), the default
// one as root (a private tmpfs with huge pages; --memory-dir /dev/shm is
// not what users run); extra flags follow those.
func newDaemon(mnt, tier, mem string, extra ...string) *daemon {
	args := []string{"mount", "--memory", mem, "--log-level", "warn", "--tier", "nvme:" + tier}
	d := &daemon{Mnt: mnt, Tier: tier, args: append(args, extra...)}
	running.Lock()
	running.all = append(running.all, d)
	running.Unlock()
	return d
}

// start runs the daemon and waits until MNT/.ucm/stats reads. It returns
// the time from the process start to that first successful read.
func (d *daemon) start() (time.Duration, error) {
	bin, err := ucmfsBinary()
	if err != nil {
		return 0, err
	}
	d.mu.Lock()
	cmd := exec.Command(bin, append(append([]string{}, d.args...), d.Mnt)...)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	exited := make(chan struct{})
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		d.mu.Unlock()
		return 0, err
	}
	d.cmd, d.out, d.exited, d.err = cmd, out, exited, nil
	go func() {
		err := cmd.Wait()
		d.mu.Lock()
		d.err = err
		d.mu.Unlock()
		close(exited)
	}()
	d.mu.Unlock()

	stats := filepath.Join(d.Mnt, ".ucm", "stats")
	for {
		if _, err := os.ReadFile(stats); err == nil {
			break
		}
		select {
		case <-exited:
			return 0, fmt.Errorf("ucmfs mount %s exited before it was ready: %v\n%s", d.Mnt, d.exitErr(), out)
		case <-time.After(pollEvery):
		}
		if time.Since(t0) > readyWait {
			return 0, fmt.Errorf("ucmfs mount %s: not ready after %v\n%s", d.Mnt, readyWait, out)
		}
	}
	took := time.Since(t0)
	// The ready line follows within the daemon's own poll interval.
	for !strings.Contains(out.String(), "ucmfs: mounted on "+d.Mnt) {
		select {
		case <-exited:
			return 0, fmt.Errorf("ucmfs mount %s exited: %v\n%s", d.Mnt, d.exitErr(), out)
		case <-time.After(pollEvery):
		}
	}
	return took, nil
}

// passthrough reports whether the ready line says passthrough is on (in
// the ready line of this version, or of one before it named the
// transport, which UCMFS_BENCH_BIN may run).
func (d *daemon) passthrough() bool {
	out := d.output()
	return strings.Contains(out, "passthrough on,") || strings.Contains(out, "passthrough on)")
}

// output is what the daemon printed.
func (d *daemon) output() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.out == nil {
		return ""
	}
	return d.out.String()
}

func (d *daemon) exitErr() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.err
}

// alive reports whether the process runs.
func (d *daemon) alive() bool {
	d.mu.Lock()
	exited := d.exited
	d.mu.Unlock()
	if exited == nil {
		return false
	}
	select {
	case <-exited:
		return false
	default:
		return true
	}
}

// stop sends SIGTERM and waits for the exit; it returns how long that
// took and an error unless the daemon exited 0.
func (d *daemon) stop() (time.Duration, error) {
	if !d.alive() {
		return 0, nil
	}
	d.mu.Lock()
	cmd, exited := d.cmd, d.exited
	d.mu.Unlock()
	t0 := time.Now()
	if !terminate(cmd.Process, exited) {
		return 0, fmt.Errorf("ucmfs mount %s ignored SIGTERM for %v", d.Mnt, exitWait)
	}
	took := time.Since(t0)
	if err := d.exitErr(); err != nil {
		return took, fmt.Errorf("ucmfs mount %s: %v\n%s", d.Mnt, err, d.output())
	}
	return took, nil
}

// terminate sends p SIGTERM and waits until exited is closed; after
// exitWait it kills p, waits, and reports false.
func terminate(p *os.Process, exited <-chan struct{}) bool {
	p.Signal(syscall.SIGTERM)
	select {
	case <-exited:
		return true
	case <-time.After(exitWait):
		p.Kill()
		<-exited
		return false
	}
}

// restart stops the daemon and starts it again on the same directories.
func (d *daemon) restart() error {
	if _, err := d.stop(); err != nil {
		return err
	}
	_, err := d.start()
	return err
}

// pid is the process id of the running daemon.
func (d *daemon) pid() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cmd.Process.Pid
}

// rss is the daemon's resident set size (VmRSS) in bytes.
func (d *daemon) rss() (int64, error) {
	return procStatus(d.pid(), "VmRSS")
}

// procStatus reads a "kB" field of /proc/PID/status, in bytes.
func procStatus(pid int, field string) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), ":")
		if !ok || name != field {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(val), " kB"), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/status %s: %w", pid, field, err)
		}
		return kb << 10, nil
	}
	return 0, fmt.Errorf("/proc/%d/status: no %s", pid, field)
}

// path joins elements under the mount point.
func (d *daemon) path(elem ...string) string {
	return filepath.Join(append([]string{d.Mnt}, elem...)...)
}

// stackStats is the part of MNT/.ucm/stats the benchmarks read.
type stackStats struct {
	Published    int64 `json:"published"`
	WriteBacks   int64 `json:"write_backs"`
	DirectWrites int64 `json:"direct_writes"`
	DirtyFiles   int64 `json:"dirty_files"`
	DirtyBytes   int64 `json:"dirty_bytes"`
	MemHits      int64 `json:"mem_hits"`   // opens served from the memory tier
	LowerHits    int64 `json:"lower_hits"` // opens served from a lower tier
}

// stats reads MNT/.ucm/stats.
func (d *daemon) stats() (stackStats, error) {
	var st stackStats
	raw, err := os.ReadFile(d.path(".ucm", "stats"))
	if err != nil {
		return st, err
	}
	err = json.Unmarshal(raw, &st)
	return st, err
}

// waitWriteBack makes every block published so far durable on the nvme
// tier (.ucm/flush all: the dirty expiry is not waited for).
func (d *daemon) waitWriteBack() error {
	f, err := os.OpenFile(d.path(".ucm", "flush"), os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.WriteString("all\n"); err != nil {
		return err
	}
	buf := make([]byte, 256)
	n, err := f.Read(buf)
	if err != nil || string(buf[:n]) != "ok flushed\n" {
		return fmt.Errorf("%s: flush: %q %v", d.Mnt, buf[:n], err)
	}
	return nil
}

// waitClean waits until the daemon holds nothing dirty (after a write
// benchmark removed its blocks: write-backs of them still under way end).
func (d *daemon) waitClean() error {
	deadline := time.Now().Add(exitWait)
	for {
		st, err := d.stats()
		if err != nil {
			return err
		}
		if st.DirtyFiles == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: still dirty after %v: %+v", d.Mnt, exitWait, st)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// stopAll stops every daemon and detaches any mount left; it returns the
// first failure.
func stopAll() error {
	running.Lock()
	defer running.Unlock()
	var errs []error
	for _, d := range running.all {
		if _, err := d.stop(); err != nil {
			errs = append(errs, err)
		}
		if len(mountsUnder(d.Mnt)) > 0 {
			unix.Unmount(d.Mnt, unix.MNT_DETACH)
		}
	}
	running.all = nil
	return errors.Join(errs...)
}

// syncBuffer collects a daemon's output.
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
