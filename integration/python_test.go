package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestPythonUnittests runs the Python package's own tests
// (python/tests, `python3 -m unittest`) against a real mount, after the
// demo and twice: they depend on nothing the mount holds, and leave
// nothing behind.
func TestPythonUnittests(t *testing.T) {
	requireTool(t, "python3")
	d := mountUCM(t, mountOpts{})
	run(t, pythonEnv(), "python3", "-m", "ucmfs", "demo", d.Mnt)
	before := modelsOf(t, d.Mnt)
	for i := range 2 {
		cmd := exec.Command("python3", "-m", "unittest", "discover", "-v", "-s", filepath.Join(pythonDir, "tests"))
		cmd.Env = append(pythonEnv(), "UCMFS_TEST_MNT="+d.Mnt)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("python3 -m unittest, run %d: %v\n%s", i+1, err, out)
		}
		if strings.Contains(string(out), "skipped") {
			t.Errorf("python tests skipped with a mount given:\n%s", out)
		}
	}
	if after := modelsOf(t, d.Mnt); !slices.Equal(after, before) {
		t.Errorf("the python tests left models behind: before %v, after %v", before, after)
	}
}

// modelsOf lists the models of a mount, sorted.
func modelsOf(t *testing.T, mnt string) []string {
	t.Helper()
	ents, err := os.ReadDir(mnt)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// TestPythonPipInstall installs the package into a fresh virtual
// environment with no package index (as offline as it gets: pip may not
// download anything, not even a build backend), then runs the installed
// ucmcli's demo against a mount.
func TestPythonPipInstall(t *testing.T) {
	requireTool(t, "python3")
	if err := exec.Command("python3", "-c", "import venv, ensurepip").Run(); err != nil {
		if os.Getenv("UCMFS_REQUIRE_FUSE") == "1" {
			t.Fatal("UCMFS_REQUIRE_FUSE=1 but python3 has no venv/ensurepip (Debian: python3-venv)")
		}
		t.Skip("python3 has no venv/ensurepip (Debian: python3-venv)")
	}
	dir := testDir(t)
	venv := filepath.Join(dir, "venv")
	// The project is copied so that nothing pip does lands in the tree.
	src := filepath.Join(dir, "src")
	run(t, nil, "cp", "-r", pythonDir, src)
	run(t, nil, "python3", "-m", "venv", venv)
	env := []string{"PIP_NO_INDEX=1", "PIP_DISABLE_PIP_VERSION_CHECK=1", "PYTHONDONTWRITEBYTECODE=1"}
	run(t, env, filepath.Join(venv, "bin", "pip"), "install", "--no-index", src)
	d := mountUCM(t, mountOpts{})
	out := run(t, env, filepath.Join(venv, "bin", "ucmcli"), "demo", d.Mnt)
	if !strings.Contains(out, "longest present prefix: 3 of 4 blocks") {
		t.Errorf("ucmcli demo:\n%s", out)
	}
	// The installed package is the one imported, not the tree's.
	where := run(t, env, filepath.Join(venv, "bin", "python"), "-c", "import ucmfs; print(ucmfs.__file__)")
	if !strings.HasPrefix(where, venv) {
		t.Errorf("ucmfs imported from %s, want the venv %s", where, venv)
	}
}

// run runs a command with extra environment entries and returns its
// stdout; it fails the test on a non-zero exit.
func run(t *testing.T, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Dir = os.TempDir()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, out, stderr.String())
	}
	return string(out)
}
