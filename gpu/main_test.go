package gpu

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/ucmfs/ucmfs/internal/engine"
)

// TestMain lets the test binary double as the engine process of the
// cross-process tests: when UCMFS_ENGINE names a kind of memory, it runs
// engine.Main instead of the tests.
func TestMain(m *testing.M) {
	if os.Getenv(engine.EnvKind) != "" {
		os.Exit(engine.Main(os.Getenv, os.Stdin, os.Stdout))
	}
	code := m.Run()
	engine.RemoveSharedStandIn()
	os.Exit(code)
}

// shmDir returns a fresh directory on /dev/shm (where engines put their
// shared memory), or under the test's temp dir where /dev/shm is absent.
func shmDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("/dev/shm", "ucmfs-gpu-")
	if err != nil {
		return t.TempDir()
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// shmFile creates a file of size bytes, each byte engine.Guard(offset).
func shmFile(t testing.TB, size int64) string {
	t.Helper()
	p := filepath.Join(shmDir(t), "region")
	if err := os.WriteFile(p, guardImage(size), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// fakeCUDA builds testdata/fakecuda.c, a stand-in driver, once per test
// binary and returns its path; it skips the test where no C compiler is
// installed.
func fakeCUDA(t testing.TB) string {
	t.Helper()
	lib, err := engine.SharedStandIn("testdata/fakecuda.c")
	if errors.Is(err, engine.ErrNoCompiler) {
		t.Skip("no C compiler (cc or gcc) to build the stand-in CUDA driver testdata/fakecuda.c")
	}
	if err != nil {
		t.Fatal(err)
	}
	return lib
}

// realCUDA opens the NVIDIA driver's device, or skips the test: the real
// CUDA path needs libcuda.so.1 and a GPU, which CI machines lack.
func realCUDA(t testing.TB) Device {
	t.Helper()
	if _, err := loadCUDA(DefaultLibrary); err != nil {
		t.Skipf("CUDA driver not available (%v): the real CUDA tests need libcuda.so.1 and a GPU", err)
	}
	d, err := Open(Config{Mode: "cuda", Logger: quietLog()})
	if errors.Is(err, ErrNoDevice) {
		t.Skipf("CUDA driver loads but offers no device: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}
