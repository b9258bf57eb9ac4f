package engine

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
)

// ErrNoCompiler: BuildStandIn found no C compiler (cc or gcc).
var ErrNoCompiler = errors.New("no C compiler (cc or gcc)")

// BuildStandIn compiles the stand-in CUDA driver (gpu/testdata/fakecuda.c,
// given as src) into dir/libfakecuda.so and returns that path, for tests
// on machines without a GPU; ErrNoCompiler where there is no compiler.
func BuildStandIn(src, dir string) (string, error) {
	cc, err := exec.LookPath("cc")
	if err != nil {
		if cc, err = exec.LookPath("gcc"); err != nil {
			return "", ErrNoCompiler
		}
	}
	lib := filepath.Join(dir, "libfakecuda.so")
	if out, err := exec.Command(cc, "-shared", "-fPIC", "-pthread", "-O1", "-o", lib, src).CombinedOutput(); err != nil {
		return "", fmt.Errorf("build %s: %w\n%s", src, err, out)
	}
	return lib, nil
}
