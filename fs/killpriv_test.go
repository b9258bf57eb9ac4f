package fs

import (
	"bytes"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
)

// lockedBuffer is a bytes.Buffer safe for the mount's logging goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestWritesSkipCapabilityCheck: a block written in 16 writes costs no
// GETXATTR of security.capability per write (the mount takes
// HANDLE_KILLPRIV_V2: no file here has privileges to drop), at most the
// kernel's first check of the inode.
func TestWritesSkipCapabilityCheck(t *testing.T) {
	var log lockedBuffer
	m := newMount(t, Options{Passthrough: true, Debug: true, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	k, d := testBlock(testModel, 91003, 16*4096)
	os.Mkdir(m.path(testModel), 0o755)
	f, err := os.OpenFile(m.keyPath(k), os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	step := len(d) / 16
	for off := 0; off < len(d); off += step {
		if _, err := f.WriteAt(d[off:min(off+step, len(d))], int64(off)); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	reread(t, m.keyPath(k), d)
	if n := strings.Count(log.String(), "security.capability"); n > 2 { // a request and its reply
		t.Fatalf("%d log lines about security.capability for 16 writes, want at most one request", n)
	}
}
