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
// (ENOLCK) the holder unlocks, and each thread prints "got" or its errno.
// Every thread, the holder too, runs on CPU 0, so every request goes to
// that CPU's FUSE queue. A 60 s alarm ends a deadlock.
const flockWaiters = `
import os, fcntl, sys, threading, signal
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
fcntl.flock(fd, fcntl.LOCK_UN)
for t in ts:
    t.join()
print(" ".join(sorted(results)))
`

// TestFlockWaitsOneCPU: many processes' blocking flocks of one lock file
// from one CPU, then the holder's unlock from that CPU, wake every waiter
// on either transport. Over io_uring each waiting handler holds a ring
// entry of CPU 0's queue, which grows so that the unlock still finds one
// (before it did, two waiters deadlocked the queue); past uring.MaxEntries
// a wait is ENOLCK, so a user's waits are bounded.
func TestFlockWaitsOneCPU(t *testing.T) {
	m := newMount(t, Options{})
	dir := m.model(t, "m", "files")
	if err := os.WriteFile(dir+"/run.lock", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waiters, refused := 8, 0
	ring := m.srv.Transport() == TransportUring
	if ring {
		refused = 3
		waiters = uring.MaxEntries - uring.DefaultThreads + refused
	}
	out, err := exec.Command("python3", "-c", flockWaiters, dir+"/run.lock",
		fmt.Sprint(waiters), fmt.Sprint(refused)).CombinedOutput()
	if err != nil {
		t.Fatalf("waiters (over %s): %v\n%s", m.srv.Transport(), err, out)
	}
	got := map[string]int{}
	for _, r := range strings.Fields(string(out)) {
		got[r]++
	}
	want := map[string]int{"got": waiters - refused}
	if refused > 0 {
		want["errno37"] = refused // ENOLCK
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("over %s: %v, want %v", m.srv.Transport(), got, want)
	}
}
