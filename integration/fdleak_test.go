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

// TestParkedStagingHoldsNoFD: 300 staging files written and closed,
// waiting for their rename, hold none of the daemon's descriptors (they
// are parked: stats count them as parked_files); each is opened again for
// a write through its name and for its rename, and publishes its bytes.
func TestParkedStagingHoldsNoFD(t *testing.T) {
	d := mountUCM(t, mountOpts{Args: []string{"--default-layout", "files"}})
	m := d.path("eng")
	if err := os.Mkdir(m, 0o755); err != nil {
		t.Fatal(err)
	}
	base := settledFDs(t, d.pid(), -1)
	const n = 300
	name := func(i int) string { return fmt.Sprintf("%s/p%03d.bin", m, i) }
	for i := range n {
		if err := os.WriteFile(name(i)+".tmp", []byte(fmt.Sprintf("page %d, ", i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	parked := settledFDs(t, d.pid(), len(base)+4)
	if len(parked) > len(base)+4 {
		t.Errorf("%d staging files closed, waiting for their rename: the daemon's descriptors went from %d to %d",
			n, len(base), len(parked))
	}
	if st := statsOf(t, d); st["parked_files"] != float64(n) || st["staging_files"] != float64(n) {
		t.Errorf("stats: parked_files %v, staging_files %v, want %d each", st["parked_files"], st["staging_files"], n)
	}
	for i := range n {
		f, err := os.OpenFile(name(i)+".tmp", os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatalf("open a parked file again: %v", err)
		}
		if _, err := f.WriteString("appended"); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(name(i)+".tmp", name(i)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		want := fmt.Sprintf("page %d, appended", i)
		if got, err := os.ReadFile(name(i)); err != nil || string(got) != want {
			t.Fatalf("%s: %q %v, want %q", name(i), got, err, want)
		}
	}
	if st := statsOf(t, d); st["parked_files"] != 0.0 || st["staging_files"] != 0.0 {
		t.Errorf("after the renames: parked_files %v, staging_files %v", st["parked_files"], st["staging_files"])
	}
}
