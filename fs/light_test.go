package fs

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/tiers"
)

// lightModel puts n blocks of model in st, every third with a sidecar,
// and returns the blocks' keys and bytes.
func lightModel(t *testing.T, st *tiers.Stack, model string, n int) ([]format.Key, [][]byte) {
	t.Helper()
	var keys []format.Key
	var datas [][]byte
	for i := 0; i < n; i++ {
		k, d := testBlock(model, i, 64+4*i)
		put(t, st, k, d)
		keys, datas = append(keys, k), append(datas, d)
		if i%3 == 0 {
			rk, rd := testRepr(k)
			put(t, st, rk, rd)
		}
	}
	return keys, datas
}

// run runs a command and returns its output; a failure fails the test.
func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// lightCount is the number of light nodes the kernel holds.
func (m *testMount) lightCount() int { return m.srv.state.light.Count() }

// TestLightSameAnswers: ls -l, du and stat of a model show the same with
// the light-node layer as through go-fuse's bridge alone, and the walk
// leaves light nodes, not go-fuse nodes, behind.
func TestLightSameAnswers(t *testing.T) {
	requireFUSE(t)
	st := newTestStackWith(t, tiers.MemConfig{Capacity: 64 << 20}, tiers.DirConfig{Kind: "nvme"})
	keys, _ := lightModel(t, st, "m", 300)
	walk := func(bridgeOnly bool) (string, int, int) {
		m := mountAt(t, t.TempDir(), st, Options{BridgeOnly: bridgeOnly})
		defer m.srv.Unmount()
		var b strings.Builder
		model := m.path("m")
		for _, line := range strings.Split(run(t, "ls", "-lnR", "--time-style=full-iso", model), "\n") {
			if !strings.HasPrefix(line, "d") { // directories show the mount's time
				b.WriteString(strings.ReplaceAll(line, m.mnt, "MNT") + "\n")
			}
		}
		b.WriteString(strings.ReplaceAll(run(t, "du", "-sb", model), m.mnt, "MNT"))
		b.WriteString(strings.ReplaceAll(run(t, "du", "-s", model), m.mnt, "MNT"))
		args := []string{"-c", "%n %i %s %b %B %f %u %g %h %X %Y %Z"}
		for _, k := range keys[:20] {
			args = append(args, m.keyPath(k), m.keyPath(format.Key{Model: k.Model, ID: k.ID, Kind: format.Repr}))
		}
		out, _ := exec.Command("stat", args...).CombinedOutput() // the missing sidecars fail
		b.WriteString(strings.ReplaceAll(string(out), m.mnt, "MNT"))
		return b.String(), m.lightCount(), m.srv.state.inos.Held()
	}
	light, n, heldLight := walk(false)
	plain, n0, heldPlain := walk(true)
	if light != plain {
		t.Fatalf("with light nodes:\n%s\nthrough the bridge:\n%s", light, plain)
	}
	if want := 300 + 100; n != want || n0 != 0 {
		t.Fatalf("light nodes after the walk: %d (bridge only: %d), want %d", n, n0, want)
	}
	if heldLight >= heldPlain-300 {
		t.Fatalf("numbers held: %d with light nodes, %d without", heldLight, heldPlain)
	}
}

// TestLightAfterListing: after ls -l of a shard its blocks stat, read,
// show their attributes, take utime as a use, copy, unlink and are
// written again as before, in both I/O modes; a second listing shows what
// changed.
func TestLightAfterListing(t *testing.T) {
	modes(t, func(t *testing.T, m *testMount) {
		keys, datas := lightModel(t, m.st, "m", 40)
		k, d := keys[0], datas[0]
		shard := filepath.Dir(m.keyPath(k))
		run(t, "ls", "-l", shard)
		if m.lightCount() == 0 {
			t.Fatal("ls -l made no light nodes")
		}
		fi, err := os.Stat(m.keyPath(k))
		if err != nil || fi.Size() != int64(len(d)) || fi.Mode().Perm() != 0o444 {
			t.Fatalf("stat: %v %v", fi, err)
		}
		if got, err := os.ReadFile(m.keyPath(k)); err != nil || !bytes.Equal(got, d) {
			t.Fatalf("read: %v", err)
		}
		if out := run(t, "getfattr", "-d", m.keyPath(k)); !strings.Contains(out, "user.ucm.") {
			t.Fatalf("getfattr -d shows no user.ucm.*:\n%s", out)
		}
		when := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
		run(t, "touch", "-m", "-d", when.Format(time.RFC3339), m.keyPath(k))
		if bi, err := m.st.Stat(k); err != nil || !bi.MTime.Equal(when) {
			t.Fatalf("utime: the stack has %v (%v), want %v", bi.MTime, err, when)
		}
		if fi, err := os.Stat(m.keyPath(k)); err != nil || !fi.ModTime().Equal(when) {
			t.Fatalf("stat after utime: %v %v", fi, err)
		}
		dst := filepath.Join(t.TempDir(), "copy")
		run(t, "cp", m.keyPath(keys[1]), dst)
		if got, err := os.ReadFile(dst); err != nil || !bytes.Equal(got, datas[1]) {
			t.Fatalf("cp: %v", err)
		}
		run(t, "rm", "-f", m.keyPath(k))
		if m.st.Has(k) {
			t.Fatal("rm left the block")
		}
		if _, err := os.Stat(m.keyPath(k)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("stat after rm: %v", err)
		}
		// The sidecar went with its block; the kernel's entry of it (a
		// light node since the listing) is dropped just after the unlink.
		side := m.keyPath(format.Key{Model: k.Model, ID: k.ID, Kind: format.Repr})
		deadline := time.Now().Add(5 * time.Second)
		for _, err := os.Stat(side); !errors.Is(err, os.ErrNotExist); _, err = os.Stat(side) {
			if time.Now().After(deadline) {
				t.Fatalf("stat of the sidecar after rm of its block: %v", err)
			}
			time.Sleep(10 * time.Millisecond)
		}
		if strings.Contains(run(t, "ls", "-l", shard), k.FileName()) {
			t.Fatal("the listing after rm shows the block")
		}
		if err := writeFile(m.keyPath(k), d); err != nil {
			t.Fatalf("write again: %v", err)
		}
		if got, err := os.ReadFile(m.keyPath(k)); err != nil || !bytes.Equal(got, d) {
			t.Fatalf("read of the new block: %v", err)
		}
		if !strings.Contains(run(t, "ls", "-l", shard), k.FileName()) {
			t.Fatal("the listing misses the block written again")
		}
	})
}

// TestLightTableFlat: two du -s in a row leave as many light nodes as
// the first (the kernel keeps the names, each gets its old id back), and
// the mount unmounts cleanly after the walks.
func TestLightTableFlat(t *testing.T) {
	requireFUSE(t)
	st := newTestStack(t)
	lightModel(t, st, "m", 500)
	mnt := t.TempDir()
	m := mountAt(t, mnt, st, Options{})
	run(t, "du", "-s", m.path("m"))
	first := m.lightCount()
	run(t, "du", "-s", m.path("m"))
	run(t, "ls", "-lR", m.path("m"))
	if again := m.lightCount(); first != 500+167 || again != first {
		t.Fatalf("light nodes: %d after one du, %d after more walks, want %d", first, again, 500+167)
	}
	var stats struct {
		LightNodes int `json:"light_nodes"`
	}
	if data, err := os.ReadFile(m.path(".ucm/stats")); err != nil {
		t.Fatal(err)
	} else if err := json.Unmarshal(data, &stats); err != nil || stats.LightNodes != first {
		t.Fatalf(".ucm/stats: light_nodes %d (%v), want %d", stats.LightNodes, err, first)
	}
	if err := m.srv.Unmount(); err != nil {
		t.Fatal(err)
	}
	if mounts, _ := os.ReadFile("/proc/mounts"); bytes.Contains(mounts, []byte(" "+mnt+" ")) {
		t.Fatal("the mount is still there")
	}
}

// TestLightWalkWhileRemoving: one process walks a model (du, ls -l, stat
// and read of each name) while another removes its blocks; every walk
// sees each name either whole or gone, and the table empties out of
// removed names once the kernel forgets them.
func TestLightWalkWhileRemoving(t *testing.T) {
	requireFUSE(t)
	st := newTestStack(t)
	keys, datas := lightModel(t, st, "m", 300)
	m := newMountWith(t, st, Options{})
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, 100)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			exec.Command("du", "-s", m.path("m")).Run() // may see a name go
			for i, k := range keys {
				got, err := os.ReadFile(m.keyPath(k))
				if err != nil && !errors.Is(err, os.ErrNotExist) {
					errs <- err
					return
				}
				if err == nil && !bytes.Equal(got, datas[i]) {
					errs <- errors.New("read other bytes")
					return
				}
			}
		}
	}()
	for i, k := range keys {
		if i%2 == 0 {
			if err := os.Remove(m.keyPath(k)); err != nil {
				t.Errorf("rm %s: %v", k.FileName(), err)
			}
		}
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for i, k := range keys {
		_, err := os.Stat(m.keyPath(k))
		if gone := errors.Is(err, os.ErrNotExist); gone != (i%2 == 0) || (err != nil && !gone) {
			t.Fatalf("%s after the removals: %v", k.FileName(), err)
		}
	}
}

// TestLightNotADirectory: a light node is a file to the kernel: a lookup
// under it is ENOTDIR.
func TestLightNotADirectory(t *testing.T) {
	m := newMount(t, Options{})
	k, d := testBlock("m", 1, 64)
	put(t, m.st, k, d)
	run(t, "ls", "-l", filepath.Dir(m.keyPath(k)))
	if _, err := os.Stat(m.keyPath(k) + "/x"); !errors.Is(err, syscall.ENOTDIR) {
		t.Fatalf("stat under a block: %v, want ENOTDIR", err)
	}
}
