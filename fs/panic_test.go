package fs

import (
	"errors"
	"log/slog"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestPanicLogged: a request whose handler panics fails with EIO and logs
// one error line with the panic and its stack at the default level
// (go-fuse's own handler writes only to its debug logger), and the mount
// keeps serving.
func TestPanicLogged(t *testing.T) {
	var out lockedBuffer
	m := newMount(t, Options{Logger: slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	boom := func() { panic("statfs exploded") }
	m.srv.state.statfsHook.Store(&boom)
	var st unix.Statfs_t
	if err := unix.Statfs(m.mnt, &st); !errors.Is(err, syscall.EIO) {
		t.Fatalf("statfs whose handler panics: %v, want EIO", err)
	}
	m.srv.state.statfsHook.Store(nil)
	if err := unix.Statfs(m.mnt, &st); err != nil {
		t.Fatalf("statfs after a panic: %v", err)
	}
	log := out.String()
	if strings.Count(log, "panic in a request handler") != 1 || !strings.Contains(log, "statfs exploded") || !strings.Contains(log, "goroutine") {
		t.Errorf("log after one panic:\n%s", log)
	}
}
