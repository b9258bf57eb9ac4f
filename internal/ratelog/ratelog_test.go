package ratelog

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// buf is a goroutine-safe buffer for the summaries written by timers.
type buf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *buf) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *buf) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func newLogger(o Options) (*slog.Logger, *Handler, *buf) {
	out := &buf{}
	h := New(slog.NewTextHandler(out, nil), o)
	return slog.New(h), h, out
}

// TestBurstAndSummary: 3,000 refusals of one kind give Burst lines and one
// summary with the count; another kind has its own budget.
func TestBurstAndSummary(t *testing.T) {
	log, h, out := newLogger(Options{Window: time.Hour, Burst: 1})
	for i := 0; i < 3000; i++ {
		log.Warn("request refused", "op", "create", "errno", "EINVAL", "i", i)
	}
	log.Warn("request refused", "op", "unlink", "errno", "EPERM")
	log.Info("not limited")
	log.Info("not limited")
	h.Flush()
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 5 {
		t.Fatalf("%d lines, want 5:\n%s", len(lines), out)
	}
	if !strings.Contains(out.String(), "… 2,999 more in the last") || !strings.Contains(out.String(), "dropped=2999") {
		t.Errorf("no summary with the count:\n%s", out)
	}
}

// TestWindowCloses: the summary comes when the window closes, and the
// kind gets a fresh budget.
func TestWindowCloses(t *testing.T) {
	log, _, out := newLogger(Options{Window: 50 * time.Millisecond, Burst: 2})
	for i := 0; i < 10; i++ {
		log.Warn("tier down", "tier", "nvme")
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(out.String(), "8 more") {
		if time.Now().After(deadline) {
			t.Fatalf("no summary after the window:\n%s", out)
		}
		time.Sleep(10 * time.Millisecond)
	}
	log.Warn("tier down", "tier", "nvme")
	if n := strings.Count(out.String(), "\n"); n != 4 {
		t.Errorf("%d lines, want 4 (2 + summary + a fresh one):\n%s", n, out)
	}
}

// TestClip: messages, strings, errors and WithAttrs values are bounded.
func TestClip(t *testing.T) {
	log, _, out := newLogger(Options{MaxAttr: 100})
	long := strings.Repeat("x", 60_000)
	log.With("ctx", long).Error(long, "err", errors.New(long), "s", long)
	if n := len(out.String()); n > 1000 {
		t.Errorf("a %d-byte line", n)
	}
	if !strings.Contains(out.String(), "bytes cut") {
		t.Errorf("no cut marker: %s", out)
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 2999: "2,999", 1234567: "1,234,567"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %s, want %s", n, got, want)
		}
	}
}
