package transfer

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/ucmfs/ucmfs/control/line"
	"github.com/ucmfs/ucmfs/gpu"
)

// TestGPUSimFileOwner: a sim region's file must belong to the caller
// unless the caller is root (the daemon writes into it, maybe as root).
func TestGPUSimFileOwner(t *testing.T) {
	dir := t.TempDir()
	os.Chmod(dir, 0o755) // searchable by the callers below
	os.Chmod(filepath.Dir(dir), 0o755)
	path := filepath.Join(dir, "kv")
	if err := os.WriteFile(path, make([]byte, 4096), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(path, 12345, 12345); err != nil {
		t.Skipf("chown: %v", err)
	}
	spec := gpu.RegionSpec{Size: 4096}
	for _, tc := range []struct {
		uid  uint32
		want error
	}{{12345, nil}, {0, nil}, {54321, line.ErrAccess}} {
		f, err := openSimAs(line.Caller{Uid: tc.uid, Gid: tc.uid, Pid: processOf(t, tc.uid)}, path, spec)
		if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("caller uid %d: %v, want %v", tc.uid, err, tc.want)
		}
		if f != nil {
			f.Close()
		}
	}
}

// openSimAs opens path for a sim region as a session opened by c would
// (its credentials captured at open, line.Creds).
func openSimAs(c line.Caller, path string, spec gpu.RegionSpec) (*os.File, error) {
	creds, err := c.Capture(true)
	if err != nil {
		return nil, err
	}
	defer creds.Close()
	return openSimFile(line.WithCreds(context.Background(), creds), path, spec)
}

// processOf starts a process running as uid (a caller of a request has
// one) and returns its pid; it ends with the test.
func processOf(t *testing.T, uid uint32) uint32 {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
	if err := cmd.Start(); err != nil {
		t.Skipf("a process as uid %d: %v", uid, err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return uint32(cmd.Process.Pid)
}
