package fs

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/ucmfs/ucmfs/control"
	"github.com/ucmfs/ucmfs/fs/ino"
	"github.com/ucmfs/ucmfs/tiers"
)

// countHandler counts log records at warning level and above.
type countHandler struct {
	mu sync.Mutex
	n  int
}

func (h *countHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (h *countHandler) Handle(context.Context, slog.Record) error {
	h.mu.Lock()
	h.n++
	h.mu.Unlock()
	return nil
}
func (h *countHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *countHandler) WithGroup(string) slog.Handler      { return h }

// TestOneLogLinePerRefusal: a refused request logs exactly one line, and
// a probe (lookup of a bad name) none at warning level.
func TestOneLogLinePerRefusal(t *testing.T) {
	st := newTestStack(t)
	h := &countHandler{}
	s := testState(t, st, Options{Logger: slog.New(h)})
	e := &caseEnv{st: st, s: s, n: 1}
	e.key, e.data = caseSetup(t, st)
	quiet := map[syscall.Errno]bool{syscall.ENOENT: true, syscall.ENODATA: true, syscall.ENOTSUP: true}
	for _, c := range errCases {
		if quiet[c.want] || strings.HasPrefix(c.name, "create published") {
			continue // misses, probes and "already published" log at debug level
		}
		h.n = 0
		if errno := c.node(e); errno != c.want {
			t.Fatalf("%s: %v", c.name, errno)
		}
		if h.n != 1 {
			t.Errorf("%s: %d log lines, want 1", c.name, h.n)
		}
	}
}

// TestNoSpace: close returns ENOSPC when no tier has room.
func TestNoSpace(t *testing.T) {
	st, err := tiers.New(tiers.StackConfig{Logger: testLogger()}, tiers.MemConfig{Capacity: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close(context.Background()) })
	k, d := testBlock(testModel, 1, 128<<10)
	s := testState(t, st, Options{Logger: testLogger()})
	e := &caseEnv{st: st, s: s}
	if errno := e.nodeWrite(k, d); errno != syscall.ENOSPC {
		t.Fatalf("node depth: %v, want ENOSPC", errno)
	}
	m := newMountWith(t, st, Options{Passthrough: true})
	os.Mkdir(m.path(testModel), 0o755)
	if err := writeFile(m.keyPath(k), d); errnoOf(err) != syscall.ENOSPC {
		t.Fatalf("kernel depth: %v, want ENOSPC", err)
	}
	if st.Has(k) {
		t.Fatal("stored without room")
	}
}

// TestReservedNumbers: the numbers package ino keeps from names are the
// ones control's table may give its files.
func TestReservedNumbers(t *testing.T) {
	if ino.Reserved != control.LastIno || control.RootIno > ino.Reserved || control.DirIno > ino.Reserved {
		t.Fatalf("ino reserves up to %d, control numbers its files up to %d", ino.Reserved, control.LastIno)
	}
}
