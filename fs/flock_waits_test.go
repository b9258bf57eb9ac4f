package fs

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/ucmfs/ucmfs/fs/uring"
)

// flockWaiters, in a Python process: the holder (this process's main
// thread) takes an exclusive flock of argv[1]; argv[2] threads, each with
// an open file of its own, wait for it; once argv[3] of them were refused
// (ENOLCK), user nobody (uid 65534) waits for a shared lock of the file
// from CPU 0 too, under a 2 s alarm; then the holder unlocks, and each
// thread prints "got" or its errno, and nobody "other:waited" (its wait
// ended by the alarm), or its errno. Every thread, the holder too, runs
// on CPU 0, so every request goes to that CPU's FUSE queue. A 60 s alarm
// ends a deadlock.
const flockWaiters = `
import os, fcntl, sys, threading, signal, subprocess
signal.alarm(60)
p, n, refused = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
os.sched_setaffinity(0, {0})
fd = os.open(p, os.O_RDWR | os.O_CREAT, 0o644)
fcntl.flock(fd, fcntl.LOCK_EX)
results, cond = [], threading.Condition()
def waiter():
    os.sched_setaffinity(0, {0})
    f = os.open(p, os.O_RDWR)
    try:
        fcntl.flock(f, fcntl.LOCK_EX)
        r = "got"
        fcntl.flock(f, fcntl.LOCK_UN)
    except OSError as e:
        r = "errno%d" % e.errno
    os.close(f)
    with cond:
        results.append(r)
        cond.notify_all()
ts = [threading.Thread(target=waiter) for _ in range(n)]
for t in ts:
    t.start()
with cond:
    cond.wait_for(lambda: len(results) >= refused)
other = subprocess.run(["python3", "-c", OTHER, p], capture_output=True, text=True,
    preexec_fn=lambda: (os.setgid(65534), os.setuid(65534)))
fcntl.flock(fd, fcntl.LOCK_UN)
for t in ts:
    t.join()
print(" ".join(sorted(results)), "other:" + (other.stdout.strip() or other.stderr.strip()[-200:]))
`

// otherWaiter is the other user's process of flockWaiters.
const otherWaiter = `
import os, fcntl, sys, signal
os.sched_setaffinity(0, {0})
def ring(*a): raise TimeoutError()
signal.signal(signal.SIGALRM, ring)
f = os.open(sys.argv[1], os.O_RDONLY)
try:
    fcntl.flock(f, fcntl.LOCK_SH | fcntl.LOCK_NB)
    print("free")
except BlockingIOError:
    signal.alarm(2)
    try:
        fcntl.flock(f, fcntl.LOCK_SH)
        print("got")
    except TimeoutError:
        print("waited")
    except OSError as e:
        print("errno%d" % e.errno)
`

// TestFlockWaitsOneCPU: many blocking flocks of one lock file from one
// CPU, then the holder's unlock from that CPU, wake every waiter on
// either transport. Over io_uring each waiting handler holds a ring entry
// of CPU 0's queue, which grows so that the unlock still finds one (before
// it did, two waiters deadlocked the queue); past uring.MaxWaits a user's
// wait is ENOLCK, so a user's waits are bounded, and another user's wait
// meanwhile still waits.
func TestFlockWaitsOneCPU(t *testing.T) {
	m := newSharedMount(t)
	dir := m.model(t, "m", "files")
	if err := os.WriteFile(dir+"/run.lock", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waiters, refused := 8, 0
	ring := m.srv.Transport() == TransportUring
	if ring {
		refused = 3
		waiters = uring.MaxWaits + refused
	}
	out, err := exec.Command("python3", "-c", strings.Replace(flockWaiters, "OTHER", fmt.Sprintf("%q", otherWaiter), 1), dir+"/run.lock",
		fmt.Sprint(waiters), fmt.Sprint(refused)).CombinedOutput()
	if err != nil {
		t.Fatalf("waiters (over %s): %v\n%s", m.srv.Transport(), err, out)
	}
	got := map[string]int{}
	for _, r := range strings.Fields(string(out)) {
		got[r]++
	}
	want := map[string]int{"got": waiters - refused, "other:waited": 1}
	if refused > 0 {
		want["errno37"] = refused // ENOLCK
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("over %s: %v, want %v", m.srv.Transport(), got, want)
	}
}
