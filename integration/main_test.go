package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ucmfs/ucmfs/internal/engine"
	"golang.org/x/sys/unix"
)

var (
	// ucmfsBin is the binary built by TestMain.
	ucmfsBin string
	// baseDir holds every test's mount points and tier directories.
	baseDir string
	// memDir is every daemon's --memory-dir: a private directory on
	// /dev/shm, removed at the end.
	memDir string
	// pythonDir is the Python client's project (python/ in the
	// repository): its package ucmfs runs as `python3 -m ucmfs`.
	pythonDir string
)

// TestMain runs the tests (runTests). With UCMFS_ENGINE set the binary
// is an engine process of the GPU tests instead (package
// internal/engine); with UCMFS_ENGINE_CHILD, a file backend's process of
// TestEngineProcesses.
func TestMain(m *testing.M) {
	if os.Getenv(engine.EnvKind) != "" {
		os.Exit(engine.Main(os.Getenv, os.Stdin, os.Stdout))
	}
	if os.Getenv(engineChildEnv) != "" {
		os.Exit(m.Run()) // a backend's process of TestEngineProcesses: no build, no mount
	}
	code := runTests(m)
	engine.RemoveSharedStandIn()
	os.Exit(code)
}

func runTests(m *testing.M) int {
	var err error
	if baseDir, err = os.MkdirTemp("", "ucmfs-it-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(baseDir)
	if memDir, err = os.MkdirTemp("/dev/shm", "ucmfs-it-"); err != nil {
		fmt.Fprintln(os.Stderr, "no /dev/shm for the memory tier:", err)
		return 1
	}
	defer os.RemoveAll(memDir)
	if pythonDir, err = filepath.Abs(filepath.Join("..", "python")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ucmfsBin = filepath.Join(baseDir, "ucmfs")
	build := exec.Command("go", "build", "-o", ucmfsBin, "github.com/ucmfs/ucmfs/cmd/ucmfs")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building ucmfs: %v\n%s", err, out)
		return 1
	}
	code := m.Run()
	if err := stopSharedFS(); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: stopping the shared filesystems:", err)
		code = 1
	}
	if left := mountsUnder(baseDir); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: mounts left behind: %s\n", strings.Join(left, ", "))
		for _, mnt := range left {
			unix.Unmount(mnt, unix.MNT_DETACH)
		}
		code = 1
	}
	return code
}

// mountsUnder lists the mount points in /proc/self/mounts at or below dir.
func mountsUnder(dir string) []string {
	data, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		mnt := unescapeOctal(f[1])
		if mnt == dir || strings.HasPrefix(mnt, dir+"/") {
			out = append(out, mnt)
		}
	}
	return out
}

// isMounted reports whether a filesystem is mounted at dir.
func isMounted(dir string) bool {
	for _, m := range mountsUnder(dir) {
		if m == dir {
			return true
		}
	}
	return false
}

var octal = regexp.MustCompile(`\\[0-7]{3}`)

// unescapeOctal undoes the \040-style escapes of /proc/self/mounts.
func unescapeOctal(s string) string {
	return octal.ReplaceAllStringFunc(s, func(e string) string {
		var b byte
		fmt.Sscanf(e[1:], "%o", &b)
		return string([]byte{b})
	})
}

// testDir makes a directory under baseDir for one test (so TestMain sees
// any mount left in it) and removes it when the test ends, after the
// daemons' cleanups.
func testDir(t testing.TB) string {
	t.Helper()
	name := regexp.MustCompile(`[^A-Za-z0-9]+`).ReplaceAllString(t.Name(), "-")
	dir, err := os.MkdirTemp(baseDir, name+"-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if isMounted(dir) || len(mountsUnder(dir)) > 0 {
			t.Errorf("mount left under %s: %v", dir, mountsUnder(dir))
			return // never remove files through a mount
		}
		os.RemoveAll(dir)
	})
	return dir
}

// requireFUSE skips the test when /dev/fuse cannot be opened, or fails it
// when UCMFS_REQUIRE_FUSE=1.
func requireFUSE(t testing.TB) {
	t.Helper()
	f, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0)
	if err == nil {
		f.Close()
		return
	}
	if os.Getenv("UCMFS_REQUIRE_FUSE") == "1" {
		t.Fatalf("UCMFS_REQUIRE_FUSE=1 but /dev/fuse cannot be opened: %v", err)
	}
	t.Skipf("no FUSE here (/dev/fuse: %v); set UCMFS_REQUIRE_FUSE=1 to make this a failure", err)
}
