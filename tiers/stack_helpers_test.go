package tiers

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/internal/blocktest"
	"github.com/ucmfs/ucmfs/tiers/dir"
)

// testLogger discards logs unless UCMFS_TEST_LOG is set.
func testLogger() *slog.Logger {
	if os.Getenv("UCMFS_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// testBlock builds a valid block of the given payload size, its id derived
// from (model, n) so tests can find it again (blocktest.Block).
func testBlock(model string, n, payload int) (format.Key, []byte) {
	return blocktest.Block(model, n, payload)
}

// newTestStack builds a stack of a memory tier of memCap bytes over one
// nvme directory tier in dir ("" = no directory tier).
func newTestStack(t testing.TB, memCap int64, dir string, cfg StackConfig) *Stack {
	t.Helper()
	var dirs []DirConfig
	if dir != "" {
		dirs = append(dirs, DirConfig{Kind: "nvme", Dir: dir})
	}
	return buildStack(t, cfg, MemConfig{Capacity: memCap}, dirs...)
}

// buildStack is New with the test logger, closed when the test ends.
func buildStack(t testing.TB, cfg StackConfig, mc MemConfig, dirs ...DirConfig) *Stack {
	t.Helper()
	cfg.Logger = testLogger()
	s, err := New(cfg, mc, dirs...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = s.Close(ctx)
	})
	return s
}

// readAll opens k through the stack and returns its bytes.
func readAll(t testing.TB, s *Stack, k format.Key) []byte {
	t.Helper()
	h, err := s.Open(k)
	if err != nil {
		t.Fatalf("open %s: %v", k, err)
	}
	defer h.File.Close()
	b, err := io.ReadAll(h.File)
	if err != nil {
		t.Fatalf("read %s: %v", k, err)
	}
	return b
}

func mustEqual(t testing.TB, what string, got, want []byte) {
	t.Helper()
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: %d bytes differ from the %d written", what, len(got), len(want))
	}
}

// waitPromoted waits (up to 10 s) until the read-path promotions are done
// and k is in memory.
func waitPromoted(t testing.TB, s *Stack, k format.Key) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if s.promoting() == 0 && s.mem.Index().Has(k) {
			return
		}
	}
	t.Fatalf("%s not promoted into memory", k)
}

// dirTier is the stack's lower tier i as the directory tier it is in
// these tests, for what the stack does not ask of a lower tier.
func dirTier(s *Stack, i int) *dir.Tier { return s.dirs[i].(*dir.Tier) }
