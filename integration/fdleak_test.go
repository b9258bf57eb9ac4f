package integration

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// fds lists the open descriptors of a process as "fd -> target".
func fds(t *testing.T, pid int) []string {
	t.Helper()
	dir := "/proc/" + strconv.Itoa(pid) + "/fd"
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		target, _ := os.Readlink(dir + "/" + e.Name())
		out = append(out, e.Name()+" -> "+target)
	}
	return out
}

// TestDaemonFDLeak runs the same workload (publish, reject, read, stat,
// xattrs, readdir, stats, unlink) several times and checks that the
// daemon's descriptor count comes back to what it was after the first
// round. FUSE sends RELEASE after close() returns, so the count is
// polled until it settles (a bounded wait, not a timing assertion).
func TestDaemonFDLeak(t *testing.T) {
	d := mountUCM(t, mountOpts{})
	os.Mkdir(d.path("m"), 0o755)
	ids := testIDs("fdleak", 32)
	round := func(r int) {
		for i, id := range ids {
			p := blockPath(d.Mnt, "m", id)
			if err := writeVerdict(p, goodBlock(id)); err != nil {
				t.Fatalf("round %d: publish: %v", r, err)
			}
			bad := goodBlock(id)
			bad[0] = 'X'
			writeVerdict(blockPath(d.Mnt, "m", testIDs(fmt.Sprintf("fdleak-bad-%d", i), 1)[0]), bad)
			if _, err := os.ReadFile(p); err != nil {
				t.Fatalf("round %d: read: %v", r, err)
			}
			f, err := os.Open(p) // held while others come and go
			if err != nil {
				t.Fatal(err)
			}
			os.Stat(p)
			unix.Getxattr(p, "user.ucm.tiers", make([]byte, 64))
			os.ReadDir(d.path("m", id[:2]))
			os.ReadFile(d.path(".ucm", "stats"))
			f.Close()
		}
		for _, id := range ids {
			if err := os.Remove(blockPath(d.Mnt, "m", id)); err != nil {
				t.Fatalf("round %d: unlink: %v", r, err)
			}
		}
	}
	round(0)
	base := settledFDs(t, d.pid(), -1)
	for r := 1; r <= 5; r++ {
		round(r)
	}
	after := settledFDs(t, d.pid(), len(base)+2)
	t.Logf("daemon fds: %d after the first round, %d after five more", len(base), len(after))
	if len(after) > len(base)+2 {
		t.Errorf("daemon fds grew from %d to %d\nbefore:\n%s\nafter:\n%s", len(base), len(after),
			strings.Join(base, "\n"), strings.Join(after, "\n"))
	}
}

// settledFDs polls the fd list of pid until it holds at most limit
// entries (limit < 0: until two reads agree), for at most 10 seconds.
func settledFDs(t *testing.T, pid, limit int) []string {
	t.Helper()
	prev := fds(t, pid)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		cur := fds(t, pid)
		if (limit >= 0 && len(cur) <= limit) || (limit < 0 && len(cur) == len(prev)) {
			return cur
		}
		prev = cur
	}
	return prev
}
