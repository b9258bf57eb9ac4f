package gpu

import (
	"io"
	"log/slog"

	"github.com/ucmfs/ucmfs/internal/engine"
)

// The engine process is package engine's Main, run by the test binary
// (see TestMain); these are its helpers under the names the tests use.
type write = engine.Write

func guardImage(size int64) []byte                    { return engine.GuardImage(size) }
func blockData(seed uint64, n int) []byte             { return engine.Pattern(seed, n) }
func expectedImage(size int64, writes []write) []byte { return engine.Image(size, writes) }
func firstDiff(got, want []byte) string               { return engine.FirstDiff(got, want) }

// quietLog is a logger that drops everything.
func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
