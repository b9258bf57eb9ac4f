package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ucmfs/ucmfs/internal/soaktest"
	"github.com/ucmfs/ucmfs/layout/files"
	"github.com/ucmfs/ucmfs/layout/posix"
	"github.com/ucmfs/ucmfs/layout/ucmb"
	"github.com/ucmfs/ucmfs/tiers"
	"github.com/ucmfs/ucmfs/tiers/rootfs/crashfs"
)

// The store soak (issue: a metamorphic soak over store + tiers): seeded
// random operations on a Store whose directory tier stands on a crash
// filesystem (tiers/rootfs/crashfs, given to the tier by
// tiers.DirConfig.OpenFS), through the store's own API as the FUSE
// adapter calls it (soak_ops_test.go) — writes of every layout under
// their final name or tmp + rename, fsynced or not, on a stack written
// through or back; renames of files and of directories; unlinks; pins;
// flushes; evictions, under memory pressure too; a model's quota; the
// directory tier failing (EIO, ENOSPC, EDQUOT) and coming back; clean
// restarts; power cuts at any operation of the disk — each checked
// against the model (soak_model_test.go), and the counters and KV events
// against what the tiers hold (soak_check_test.go). A failing seed
// prints its replay.
//
// UCMFS_SOAK_SECONDS runs it that long (make soak SECONDS=N; default a
// few seconds, for make test); UCMFS_SOAK_SEED replays one seed;
// UCMFS_SOAK_STRICT as in the tiers soak (soakOpen).

// soakOps is how many operations one seed runs.
const soakOps = 300

// storeSoak is one seed's run: the disk, the store over it, the model.
type storeSoak struct {
	t       testing.TB
	seed    uint64
	r       *rand.Rand
	disk    *crashfs.Disk
	shm     string
	s       *Store
	st      *tiers.Stack
	book    soakBook
	names   []*soakName
	moves   []*soakMove // moves of durable files that failed, since the last power cut
	ev      soakEvents
	mu      sync.Mutex // log: the store's warnings come from its goroutines
	log     []string
	tgid    uint32
	cutArm  bool
	wt      bool // the stack writes through: every publish is durable
	faulted bool // an error was injected since the store opened
	// recordLeft: a directory move's record could not be dropped in
	// this run (a mismatch is then named "move-record-left").
	recordLeft atomic.Bool
}

func (sr *storeSoak) logf(format string, args ...any) {
	sr.mu.Lock()
	sr.log = append(sr.log, fmt.Sprintf(format, args...))
	sr.mu.Unlock()
}

// Write takes the store's and the tiers' warnings into the replay, in
// their place among the operations (soakLogger).
func (sr *storeSoak) Write(b []byte) (int, error) {
	if bytes.Contains(b, []byte("its record not dropped")) {
		sr.recordLeft.Store(true)
	}
	sr.logf("    log: %s", strings.TrimSpace(string(b)))
	return len(b), nil
}

// soakOpen are the findings of the store soak not fixed yet: a run meets
// them, logs them and goes on; UCMFS_SOAK_STRICT=1 (or a list of
// classes) fails on them too. move-record-left: a directory move's
// record that could not be dropped is finished again at the next start.
// A file published beneath the old name since is held back
// (files_move_left.go, seed 1796662221591818150), and a record left by a
// move that failed and was undone is dropped at the close once the tier
// takes writes again (seed 1796673849428973367); still open: a tier
// still down for writes at the close keeps the record, and the next
// start finishes the move that failed, moving the files the caller was
// told stayed where they were (docs/semantics.md).
var soakOpen = map[string]string{
	"move-record-left": "a directory move that failed, its record left on a tier still down at the close, finished at the next start",
}

// open reports an open finding of class, or fails the run when the soak
// is strict or the class is not an open finding.
func (sr *storeSoak) open(class, format string, args ...any) {
	sr.t.Helper()
	if _, ok := soakOpen[class]; !ok || soaktest.Strict(class) {
		sr.fail("%s: %s", class, fmt.Sprintf(format, args...))
	}
	sr.logf("OPEN FINDING %s: %s", class, fmt.Sprintf(format, args...))
	sr.t.Logf("store soak seed %d: open finding %s: %s", sr.seed, class, fmt.Sprintf(format, args...))
}

// fail stops the run with its replay.
func (sr *storeSoak) fail(format string, args ...any) {
	sr.t.Helper()
	sr.t.Fatalf("store soak seed %d: %s\nreplay: UCMFS_SOAK_SEED=%d go test ./store/ -run 'TestStoreSoak$'\noperations:\n  %s",
		sr.seed, fmt.Sprintf(format, args...), sr.seed, strings.Join(sr.log, "\n  "))
}

// soakLogger discards the store's logs, or writes its warnings to w.
func soakLogger(w io.Writer) *slog.Logger {
	if w == nil {
		w = io.Discard
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// start opens a stack over the disk, its settings drawn for this start,
// and the store over it, as the daemon does at mount.
func (sr *storeSoak) start() {
	if late := sr.disk.Late(); len(late) > 0 {
		sr.fail("the tier directory was used after the stack's Close: %q", late)
	}
	sync, wt := sr.r.IntN(3) == 0, sr.r.IntN(3) == 0
	log := soakLogger(sr)
	cfg := tiers.StackConfig{Logger: log, WriteThrough: wt, RetryDelay: 5 * time.Millisecond, RoomWait: 200 * time.Millisecond}
	if sr.r.IntN(2) == 0 {
		cfg.DirtyExpire = time.Hour // write-back only under pressure, a flush or the close
	}
	dc := tiers.DirConfig{Kind: "nvme", Dir: sr.disk.Dir(), Capacity: 16 << 20, SyncOnCommit: &sync,
		OpenFS: sr.disk.Open, OpTimeout: 10 * time.Second, Logger: log,
		ProbeInterval: 5 * time.Millisecond} // a tier down comes back soon
	st, err := tiers.New(cfg, tiers.MemConfig{Capacity: 256 << 10, Dir: sr.shm, Logger: log}, dc)
	sr.logf("open sync=%v write-through=%v expire=%v: %v", sync, wt, cfg.DirtyExpire, err)
	if err != nil {
		sr.fail("open the stack: %v", err)
	}
	s, err := New(st, Options{Logger: log, EventsWindow: 1 << 16, MaxPending: -1})
	if err != nil {
		sr.fail("open the store: %v", err)
	}
	sr.s, sr.st, sr.faulted, sr.wt = s, st, false, wt
	sr.ev.reset(s)
}

// setup makes the soak's models, one of each layout, and the files
// model's first directories, then flushes: the disk's first durable state.
func (sr *storeSoak) setup() {
	ms := sr.s.Models()
	for model, l := range map[string]string{soakUCMB: ucmb.Name, soakPosix: posix.Name, soakFiles: files.Name} {
		ms.Add(model)
		if err := sr.s.setLayout(model, l); err != nil {
			sr.fail("layout of %s: %v", model, err)
		}
	}
	for w := range 3 {
		if err := ms.AddShardWidth(soakPosix, w); err != nil {
			sr.fail("shard width %d: %v", w, err)
		}
	}
	for _, d := range soakDirs[:2] {
		if err := sr.s.FilesMkdir(soakFiles, d, 0); err != nil {
			sr.fail("mkdir %s: %v", d, err)
		}
	}
	if err := sr.s.Flush(context.Background(), ""); err != nil {
		sr.fail("flush after the setup: %v", err)
	}
}

// close closes the store and its stack as the daemon's unmount does.
func (sr *storeSoak) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sr.s.Close()
	err := sr.st.Close(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		sr.fail("close did not end in 30s")
	}
	return err
}

// restart closes the store and opens it again: everything published is
// there as it was (the close writes back what memory holds); a close
// that could not write some back loses those, as a power cut would.
func (sr *storeSoak) restart() {
	sr.disk.SetFault(nil)
	sr.cutArm = false
	sr.checkTiers("before the close")
	err := sr.close()
	sr.logf("restart: close: %v", err)
	if sr.disk.Cut() {
		sr.powerCut()
		return
	}
	if err != nil {
		sr.reopen(false)
		return
	}
	sr.start()
	sr.checkLayouts()
	for _, n := range sr.names {
		sr.check(n)
	}
}

// powerCut ends the store as a power cut does, brings the disk back
// with only what was durable, and reopens.
func (sr *storeSoak) powerCut() {
	sr.disk.PowerCut()
	err := sr.close()
	sr.logf("power cut: close: %v", err)
	sr.cutArm = false
	if err := soaktest.Restore(sr.disk, sr.shm); err != nil {
		sr.fail("%v", err)
	}
	sr.reopen(true)
}

// reopen opens the store again after a power cut (restored) or a close
// that lost what it did not write back, and checks every name against
// what survives a power cut.
func (sr *storeSoak) reopen(restored bool) {
	sr.start()
	sr.checkLayouts()
	for _, n := range sr.names {
		v, err := sr.read(n)
		sr.logf("  after the cut %s: v%d %v (lineages from their floors %v, absent ok %v)", n.key, v, err, n.hist, n.absentOK)
		if err != nil {
			sr.fail("read %s after the power cut: %v", n.key, err)
		}
		if v == -2 {
			sr.open("torn", "%s after the power cut: bytes of no version written (torn, or another's)", n.key)
			if err := sr.unlink(n); err != nil {
				sr.fail("remove the torn %s: %v", n.key, err)
			}
			v = -1
		}
		if hist := fmt.Sprint(n.hist); !n.afterCut(v, &sr.book, restored) {
			sr.open("older", "%s after the power cut: v%d, but the versions acknowledged durable are %s (lineage: floor)", n.key, v, hist)
		}
	}
	for _, m := range sr.moves {
		if !m.holds(&sr.book) {
			sr.open("older", "after the power cut neither %s nor %s holds the durable file (lineage %d from v%d) a failed move took from one to the other", m.from.key, m.to.key, m.lin, m.floor)
		}
	}
	if restored {
		sr.moves = nil
	}
}

// checkLayouts fails the run when a model's layout was lost: it was made
// durable by the setup's flush.
func (sr *storeSoak) checkLayouts() {
	for model, l := range map[string]string{soakUCMB: ucmb.Name, soakPosix: posix.Name, soakFiles: files.Name} {
		if got := sr.s.Models().Layout(model); got != l {
			sr.open("settings", "model %s has layout %q after the reopen, want %q", model, got, l)
		}
	}
}

// soak runs one seed and returns how many operations it ran.
func soak(t testing.TB, seed uint64) int {
	base := t.TempDir()
	disk, err := crashfs.New(filepath.Join(base, "nvme"))
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(seed, 52))
	disk.Torn = seed%2 == 1
	disk.TornLen = func(n int) int { return r.IntN(n + 1) }
	sr := &storeSoak{t: t, seed: seed, r: r, disk: disk, shm: filepath.Join(base, "mem"),
		book: soakBook{byHash: map[[32]byte]int{}, lineage: map[int]int{}}}
	sr.names = sr.book.soakNames()
	if err := os.MkdirAll(sr.shm, 0o700); err != nil {
		t.Fatal(err)
	}
	sr.start()
	sr.setup()
	ops := 0
	for ; ops < soakOps; ops++ {
		sr.step()
	}
	sr.restart()
	sr.checkTiers("at the end")
	sr.close()
	return ops
}

// TestStoreSoak runs seeds for soaktest.Seconds (one seed:
// UCMFS_SOAK_SEED) and logs the operations per second.
func TestStoreSoak(t *testing.T) {
	if seed, ok, err := soaktest.Seed(); err != nil || ok {
		if err != nil {
			t.Fatal(err)
		}
		soak(t, seed)
		return
	}
	start, ops, seeds := time.Now(), 0, 0
	for seed := uint64(start.UnixNano()); time.Since(start) < soaktest.Seconds(); seed++ {
		ops += soak(t, seed)
		seeds++
	}
	el := time.Since(start)
	t.Logf("store soak: %d seeds, %d operations in %v: %.0f operations/s (load %s)", seeds, ops, el.Round(time.Millisecond), float64(ops)/el.Seconds(), soaktest.LoadAvg())
}

// BenchmarkStoreSoak runs b.N seeds of the store soak and reports its
// operations per second.
func BenchmarkStoreSoak(b *testing.B) {
	start, ops := time.Now(), 0
	for i := range b.N {
		ops += soak(b, uint64(i))
	}
	b.ReportMetric(float64(ops)/time.Since(start).Seconds(), "ops/s")
}
