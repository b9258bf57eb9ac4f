package engine

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
)

// ErrNoCompiler: BuildStandIn found no C compiler (cc or gcc).
var ErrNoCompiler = errors.New("no C compiler (cc or gcc)")

// BuildStandIn compiles the stand-in CUDA driver (gpu/testdata/fakecuda.c,
// given as src) into dir/libfakecuda.so and returns that path, for tests
// on machines without a GPU; ErrNoCompiler where there is no compiler
// (unless EnvRequireStandIn is set).
func BuildStandIn(src, dir string) (string, error) {
	cc, err := exec.LookPath("cc")
	if err != nil {
		if cc, err = exec.LookPath("gcc"); err != nil {
			if os.Getenv(EnvRequireStandIn) != "" {
				return "", fmt.Errorf("%s is set and the stand-in driver cannot be built: %v", EnvRequireStandIn, ErrNoCompiler)
			}
			return "", ErrNoCompiler
		}
	}
	lib := filepath.Join(dir, "libfakecuda.so")
	if out, err := exec.Command(cc, "-shared", "-fPIC", "-pthread", "-O1", "-o", lib, src).CombinedOutput(); err != nil {
		return "", fmt.Errorf("build %s: %w\n%s", src, err, out)
	}
	return lib, nil
}

// shared is the stand-in driver built once per process.
var shared struct {
	once     sync.Once
	dir, lib string
	err      error
}

// EnvRequireStandIn, when set (CI sets it), makes a missing C compiler an
// error BuildStandIn returns without wrapping ErrNoCompiler, so tests
// that skip on ErrNoCompiler fail instead: there the stand-in tests must
// run.
const EnvRequireStandIn = "UCMFS_REQUIRE_STANDIN"

// SharedStandIn builds the stand-in driver from src once per process, in
// a temporary directory that RemoveSharedStandIn deletes, and returns its
// path (every later call returns the same, or the same error).
func SharedStandIn(src string) (string, error) {
	shared.once.Do(func() {
		if shared.dir, shared.err = os.MkdirTemp("", "ucmfs-fakecuda-"); shared.err == nil {
			shared.lib, shared.err = BuildStandIn(src, shared.dir)
		}
	})
	return shared.lib, shared.err
}

// RemoveSharedStandIn deletes what SharedStandIn built (a test binary's
// TestMain calls it at the end).
func RemoveSharedStandIn() {
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
}
