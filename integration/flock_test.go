package integration

import (
	"os/exec"
	"strings"
	"testing"
)

// flockChecks runs, in the directory argv[1], the lock-file idiom of
// engines and tools (open O_RDWR|O_CREAT, then flock) between this
// process and others, and prints one line per check: "name got want".
// A lock the kernel releases at a close or an exit is waited for (a
// blocking flock, under a 30 s alarm), since that release reaches the
// daemon after close returns.
const flockChecks = `
import os, fcntl, subprocess, sys
d = sys.argv[1]
def other(p, op, mode="os.O_RDWR|os.O_CREAT", block=False):
    nb = "" if block else "|fcntl.LOCK_NB"
    code = ("import os, fcntl, signal\nsignal.alarm(30)\nfd = os.open(%r, %s, 0o644)\n"
            "try:\n fcntl.flock(fd, %s%s); print('got')\nexcept BlockingIOError: print('busy')") % (p, mode, op, nb)
    return subprocess.run(["python3", "-c", code], capture_output=True, text=True).stdout.strip() or "error"
def check(name, got, want):
    print(name, got, want)
for name, published in (("new", False), ("published", True)):
    p = d + "/" + name + ".lock"
    if published:
        open(p, "wb").close()
    fd = os.open(p, os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)
    check(name + "/ex-held:other-ex", other(p, "fcntl.LOCK_EX"), "busy")
    check(name + "/ex-held:other-sh-readonly", other(p, "fcntl.LOCK_SH", "os.O_RDONLY"), "busy")
    fcntl.flock(fd, fcntl.LOCK_UN)
    check(name + "/unlocked:other-ex", other(p, "fcntl.LOCK_EX"), "got")
    fcntl.flock(fd, fcntl.LOCK_SH)
    check(name + "/sh-held:other-sh", other(p, "fcntl.LOCK_SH"), "got")
    check(name + "/sh-held:other-ex", other(p, "fcntl.LOCK_EX"), "busy")
    os.close(fd)
    check(name + "/closed:other-ex", other(p, "fcntl.LOCK_EX", block=True), "got")
fd = os.open(d, os.O_RDONLY)
fcntl.flock(fd, fcntl.LOCK_EX)
check("directory/ex-held:other-ex", other(d, "fcntl.LOCK_EX", "os.O_RDONLY"), "busy")
os.close(fd)
p = d + "/published.lock"
holder = subprocess.Popen(["python3", "-c", "import os, fcntl, time\nfd = os.open(%r, os.O_RDWR)\n"
    "fcntl.flock(fd, fcntl.LOCK_EX); print('held', flush=True); time.sleep(600)" % p], stdout=subprocess.PIPE, text=True)
holder.stdout.readline()
check("killed/held:other-ex", other(p, "fcntl.LOCK_EX"), "busy")
holder.kill(); holder.wait()
check("killed/after:other-ex", other(p, "fcntl.LOCK_EX", block=True), "got")
`

// TestFlockAcrossProcesses: flock(2) excludes across processes in a files
// model as on a local disk, on either transport, also where each process
// opening the file for writing gets a version of its own (the daemon
// keeps flock locks by name, fs/flock.go): exclusive against exclusive
// and shared, shared with shared, LOCK_UN, a close and a kill -9 of the
// holder release; a directory's lock too.
func TestFlockAcrossProcesses(t *testing.T) {
	d := mountUCM(t, mountOpts{})
	filesModel(t, d, "m")
	out, err := exec.Command("python3", "-c", flockChecks, d.path("m")).CombinedOutput()
	if err != nil {
		t.Fatalf("checks: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 15 {
		t.Fatalf("%d checks ran, want 15:\n%s", len(lines), out)
	}
	transport := "/dev/fuse"
	if strings.Contains(d.out.String(), "FUSE over io_uring") {
		transport = "io_uring"
	}
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) != 3 {
			t.Errorf("%q: want check, got, want", l)
			continue
		}
		if f[1] != f[2] {
			t.Errorf("%s (check, got, want; over %s)", l, transport)
		}
	}
}
