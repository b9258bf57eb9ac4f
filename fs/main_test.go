package fs

import (
	"fmt"
	"os"
	"testing"

	"github.com/moby/sys/mountinfo"
	"github.com/ucmfs/ucmfs/internal/engine"
)

// TestMain runs the tests, then fails if any mount they made is still
// mounted. With UCMFS_ENGINE set the binary is an engine process of the
// GPU tests instead (package internal/engine).
func TestMain(m *testing.M) {
	if os.Getenv(engine.EnvKind) != "" {
		os.Exit(engine.Main(os.Getenv, os.Stdin, os.Stdout))
	}
	code := m.Run()
	engine.RemoveSharedStandIn()
	if left := leftMounts(); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "mounts left behind: %v\n", left)
		code = 1
	}
	os.Exit(code)
}

// leftMounts returns the mount points of this binary still in the mount
// table.
func leftMounts() []string {
	mounted.Lock()
	ours := make(map[string]bool, len(mounted.dirs))
	for _, d := range mounted.dirs {
		ours[d] = true
	}
	mounted.Unlock()
	mounts, err := mountinfo.GetMounts(func(m *mountinfo.Info) (skip, stop bool) {
		return !ours[m.Mountpoint], false
	})
	if err != nil {
		return nil
	}
	var left []string
	for _, m := range mounts {
		left = append(left, m.Mountpoint)
	}
	return left
}
