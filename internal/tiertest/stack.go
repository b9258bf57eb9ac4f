package tiertest

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/ucmfs/ucmfs/tiers"
)

// NewStack builds a stack of one memory tier and one directory tier from
// mc and dc (log filled in, and an empty temporary Dir when dc has none),
// closed when the test ends: the stack the tests of the packages above
// tiers run on.
func NewStack(t testing.TB, log *slog.Logger, mc tiers.MemConfig, dc tiers.DirConfig) *tiers.Stack {
	t.Helper()
	return NewStackConfig(t, tiers.StackConfig{}, log, mc, dc)
}

// NewStackConfig is NewStack with the stack's own settings sc (its Logger
// is log).
func NewStackConfig(t testing.TB, sc tiers.StackConfig, log *slog.Logger, mc tiers.MemConfig, dc tiers.DirConfig) *tiers.Stack {
	t.Helper()
	sc.Logger, mc.Logger, dc.Logger = log, log, log
	if dc.Dir == "" {
		dc.Dir = t.TempDir()
	}
	st, err := tiers.New(sc, mc, dc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = st.Close(ctx)
	})
	return st
}
