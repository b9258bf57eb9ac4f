package dir

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/tiers/tier"

	"github.com/ucmfs/ucmfs/tiers/rootfs"
	"github.com/ucmfs/ucmfs/tiers/rootfs/crashfs"
	"golang.org/x/sys/unix"
)

// healthKey is block n of model "h".
func healthKey(n byte) format.Key { return format.Key{Model: "h", ID: format.ID{n, 1, 2, 3}} }

func TestHealthStallDownAndBack(t *testing.T) {
	dir := t.TempDir()
	// Real I/O gets the time it needs on a loaded machine; the stalls
	// below are the gate's, answered past the short timeout set for them.
	// (The timeout is read by the caller of each operation, this test's
	// goroutine, and never by a detached one.)
	g := crashfs.NewGate()
	d, err := New(Config{Kind: "nfs", Dir: dir, Capacity: 1 << 20, OpTimeout: 30 * time.Second, Logger: slog.New(slog.DiscardHandler),
		ProbeInterval: time.Hour, // the test probes by hand
		OpenFS:        crashfs.OpenWrapped(g.Before)})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	w, err := d.Create(healthKey(1))
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("block"))
	if _, err := w.Commit(tier.CommitOptions{}); err != nil {
		t.Fatal(err)
	}

	d.timeout = 50 * time.Millisecond
	g.Hold("open", "mkdir") // the directory's answer to Open and Create
	if _, err := d.Open(healthKey(1)); !errors.Is(err, tier.ErrStalled) {
		t.Fatalf("open of a stalled directory: %v, want ErrStalled", err)
	}
	if d.Health() != Down {
		t.Fatalf("health %v after a stall, want down", d.Health())
	}
	calls := g.Calls()
	// While Down, operations fail fast without touching the directory.
	if _, err := d.Create(healthKey(2)); !errors.Is(err, tier.ErrStalled) {
		t.Fatalf("create while down: %v", err)
	}
	if err := d.Remove(healthKey(1)); !errors.Is(err, tier.ErrStalled) {
		t.Fatalf("remove while down: %v", err)
	}
	if err := d.Sync(healthKey(1)); !errors.Is(err, tier.ErrStalled) {
		t.Fatalf("sync while down: %v", err)
	}
	if n := g.Calls(); n != calls {
		t.Fatalf("%d operations reached the directory while down", n-calls)
	}
	// The index still answers Stat.
	if info, err := d.Stat(healthKey(1)); err != nil || info.Size != 5 {
		t.Fatalf("stat from the index while down: %+v %v", info, err)
	}

	g.Open()
	d.timeout = 30 * time.Second // real I/O again
	d.probe()
	if d.Health() != Unstable {
		t.Fatalf("health %v after a good probe, want unstable", d.Health())
	}
	for i := 0; i < upAfter; i++ {
		f, err := d.Open(healthKey(1))
		if err != nil {
			t.Fatalf("open after recovery: %v", err)
		}
		f.Close()
	}
	if d.Health() != Up {
		t.Fatalf("health %v after %d successes, want up", d.Health(), upAfter)
	}
}

func TestHealthLateCreateCleansUp(t *testing.T) {
	dir := t.TempDir()
	// nfs: its operations run detached, so a stalled one is abandoned.
	g := crashfs.NewGate()
	d, err := New(Config{Kind: "nfs", Dir: dir, Capacity: 1 << 20, OpTimeout: 50 * time.Millisecond, Logger: slog.New(slog.DiscardHandler),
		ProbeInterval: time.Hour, OpenFS: crashfs.OpenWrapped(g.Before)})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	g.Hold("open", "mkdir") // the directory's answer to Create
	if _, err := d.Create(healthKey(1)); !errors.Is(err, tier.ErrStalled) {
		t.Fatalf("create: %v, want ErrStalled", err)
	}
	g.Open()
	// The abandoned create finishes in the background and removes its
	// temp file: wait for it (bounded), then check nothing is left.
	deadline := time.Now().Add(10 * time.Second)
	for d.stuck.Load() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the abandoned create never finished")
		}
		time.Sleep(5 * time.Millisecond)
	}
	ents, _ := os.ReadDir(filepath.Join(dir, "h", healthKey(1).ID.Shard()))
	for _, e := range ents {
		t.Fatalf("%s left by an abandoned create", e.Name())
	}
}

// TestHealthInlineStall: on nvme operations run inline; one that gets no
// answer in time takes the tier Down through the watchdog, others fail
// fast meanwhile, and the stalled caller gets its own answer once the
// directory gives it.
func TestHealthInlineStall(t *testing.T) {
	dir := t.TempDir()
	// The block is written by a tier with the kind's own timeout: a real
	// create past 20 ms on a loaded machine would take the tier below
	// down before the test's stall (the watchdog reads the timeout, so
	// the test cannot change it on a running tier).
	w0, err := New(Config{Kind: "nvme", Dir: dir, Capacity: 1 << 20, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	w, err := w0.Create(healthKey(1))
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("block"))
	if _, err := w.Commit(tier.CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	w0.Close()
	g := crashfs.NewGate()
	d, err := New(Config{Kind: "nvme", Dir: dir, Capacity: 1 << 20, OpTimeout: 20 * time.Millisecond, Logger: slog.New(slog.DiscardHandler),
		ProbeInterval: time.Hour, // the test probes by hand
		OpenFS:        crashfs.OpenWrapped(g.Before)})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if !d.inline {
		t.Fatal("nvme operations do not run inline")
	}
	g.Hold("open")
	opened := make(chan error, 1)
	go func() {
		f, err := d.Open(healthKey(1))
		if err == nil {
			f.Close()
		}
		opened <- err
	}()
	deadline := time.Now().Add(10 * time.Second)
	for d.Health() != Down {
		if time.Now().After(deadline) {
			t.Fatal("the watchdog never took the stalled tier down")
		}
		time.Sleep(5 * time.Millisecond)
	}
	calls := g.Calls()
	if _, err := d.Create(healthKey(2)); !errors.Is(err, tier.ErrStalled) {
		t.Fatalf("create while down: %v, want ErrStalled", err)
	}
	if n := g.Calls(); n != calls {
		t.Fatal("an operation reached the directory while down")
	}
	g.Open()
	if err := <-opened; err != nil {
		t.Fatalf("the stalled open, once answered: %v", err)
	}
	d.probe()
	if d.Health() != Unstable {
		t.Fatalf("health %v after a good probe, want unstable", d.Health())
	}
}

func TestHealthObserve(t *testing.T) {
	var h healthState
	h.observe("read", syscall.EIO)
	if h.get() != Unstable {
		t.Fatalf("EIO: %v, want unstable", h.get())
	}
	for i := 0; i < 10; i++ {
		h.observe("read", syscall.EIO)
	}
	if h.get() != Unstable {
		t.Fatalf("repeated EIO: %v; I/O errors alone must not take a tier down", h.get())
	}
	for i := 0; i < upAfter-1; i++ {
		h.observe("read", nil)
	}
	if h.get() != Unstable {
		t.Fatal("up too early")
	}
	h.observe("read", syscall.ENOENT) // an answer about a file is a success
	if h.get() != Up {
		t.Fatalf("after %d successes: %v, want up", upAfter, h.get())
	}
	h.observe("read", syscall.ENOTCONN)
	if h.get() != Down {
		t.Fatalf("ENOTCONN: %v, want down", h.get())
	}
	if Up.String() != "up" || Unstable.String() != "unstable" || Down.String() != "down" {
		t.Fatal("Health strings")
	}
}

func TestPublishModes(t *testing.T) {
	for _, mode := range []int32{pubRenameat2, pubLink, pubCheckRename} {
		dir := t.TempDir()
		var p publisher
		p.mode.Store(mode)
		tmp, dst := filepath.Join(dir, ".tmp-a"), filepath.Join(dir, "a.bin")
		root, err := rootfs.Open(dir, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer root.Close()
		os.WriteFile(tmp, []byte("first"), 0o444)
		if err := p.publish(root, ".tmp-a", "a.bin"); err != nil {
			t.Fatalf("mode %d: %v", mode, err)
		}
		if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("mode %d: temp name still there", mode)
		}
		os.WriteFile(tmp, []byte("second"), 0o444)
		if err := p.publish(root, ".tmp-a", "a.bin"); !errors.Is(err, tier.ErrExist) {
			t.Fatalf("mode %d: publish over a file: %v, want ErrExist", mode, err)
		}
		if got, _ := os.ReadFile(dst); string(got) != "first" {
			t.Fatalf("mode %d: file replaced with %q", mode, got)
		}
		if got, _ := os.ReadFile(tmp); string(got) != "second" {
			t.Fatalf("mode %d: temp file lost after ErrExist", mode)
		}
		if p.mode.Load() != mode {
			t.Fatalf("mode %d fell back to %d on a filesystem that supports it", mode, p.mode.Load())
		}
	}
}

// TestHealthFailingWrites: EROFS, and EIO from a write, take the tier Down
// at once with the reason, which the fail-fast error carries.
func TestHealthFailingWrites(t *testing.T) {
	for _, c := range []struct {
		op     string
		err    error
		reason error
	}{{"create", syscall.EROFS, tier.ErrReadOnly}, {"read", syscall.EROFS, tier.ErrReadOnly}, {"commit", syscall.EIO, tier.ErrTierFailed}} {
		var h healthState
		if !h.observe(c.op, c.err) || h.get() != Down || h.failing() != c.reason {
			t.Errorf("%s %v: %v (%v), want down (%v)", c.op, c.err, h.get(), h.failing(), c.reason)
		}
	}
}

// TestHealthSharedESTALE: on a shared tier ESTALE (another host removed
// the file) is a miss and leaves the tier up; on a local one it is a
// failing directory.
func TestHealthSharedESTALE(t *testing.T) {
	for _, shared := range []bool{true, false} {
		d, err := New(Config{Kind: "nfs", Dir: t.TempDir(), Shared: &shared})
		if err != nil {
			t.Fatal(err)
		}
		d.health.observe("open", d.healthErr(fmt.Errorf("open: %w", unix.ESTALE)))
		want := Up
		if !shared {
			want = Unstable
		}
		if got := d.Health(); got != want {
			t.Errorf("shared=%v: health %v after ESTALE, want %v", shared, got, want)
		}
		d.Close()
	}
}
