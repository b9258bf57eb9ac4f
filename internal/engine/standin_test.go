package engine

import (
	"errors"
	"testing"
)

// TestBuildStandInNoCompiler: without a C compiler BuildStandIn says
// ErrNoCompiler (tests skip), unless EnvRequireStandIn is set (CI: they
// fail).
func TestBuildStandInNoCompiler(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv(EnvRequireStandIn, "")
	if _, err := BuildStandIn("../testdata/fakecuda.c", t.TempDir()); !errors.Is(err, ErrNoCompiler) {
		t.Errorf("no compiler: %v, want ErrNoCompiler", err)
	}
	t.Setenv(EnvRequireStandIn, "1")
	if _, err := BuildStandIn("../testdata/fakecuda.c", t.TempDir()); err == nil || errors.Is(err, ErrNoCompiler) {
		t.Errorf("no compiler with %s set: %v, want an error that is not ErrNoCompiler", EnvRequireStandIn, err)
	}
}
