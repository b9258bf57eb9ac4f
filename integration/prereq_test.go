package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// toolPackages names the Debian package of each command the tests run
// that a minimal system may lack (.ci/run installs them; README's "Before
// you start" names them).
var toolPackages = map[string]string{
	"getfattr": "attr", "setfattr": "attr", "rsync": "rsync", "curl": "curl",
	"logrotate": "logrotate", "python3": "python3", "fincore": "util-linux",
	"useradd": "passwd", "make": "make", "mount": "mount", "fio": "fio",
}

// requireTool returns the path of a command; where it is missing it
// skips the test with the package to install, or fails it when
// UCMFS_REQUIRE_FUSE=1 (CI installs every tool the tests use). It looks
// in the system directories too, which a user's PATH may lack.
func requireTool(t testing.TB, name string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, dir := range []string{"/usr/sbin", "/sbin"} {
		if p := filepath.Join(dir, name); exec.Command(p, "--version").Run() == nil {
			return p
		}
	}
	msg := name + " is not installed"
	if pkg := toolPackages[name]; pkg != "" {
		msg += " (Debian: apt-get install " + pkg + "; .ci/run installs every package the tests use)"
	}
	if os.Getenv("UCMFS_REQUIRE_FUSE") == "1" {
		t.Fatalf("UCMFS_REQUIRE_FUSE=1 but %s", msg)
	}
	t.Skip(msg)
	return ""
}

// TestREADMENamesTestPackages: every package .ci/run installs for the
// tests, and every one requireTool names, is in README's "Before you
// start", so a user who runs make test without .ci/run knows them.
func TestREADMENamesTestPackages(t *testing.T) {
	ci, err := os.ReadFile(filepath.Join("..", ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, before, _ := strings.Cut(string(readme), "## Before you start")
	before, _, _ = strings.Cut(before, "\n## ")
	var pkgs []string
	for _, m := range regexp.MustCompile(`need\+=\(([^)]*)\)`).FindAllStringSubmatch(string(ci), -1) {
		pkgs = append(pkgs, strings.Fields(m[1])...)
	}
	if len(pkgs) < 5 {
		t.Fatalf("found only %v in .ci/run", pkgs)
	}
	for _, pkg := range toolPackages {
		if pkg != "util-linux" && pkg != "passwd" && pkg != "make" && pkg != "mount" { // in every Debian system
			pkgs = append(pkgs, pkg)
		}
	}
	slices.Sort(pkgs)
	for _, pkg := range slices.Compact(pkgs) {
		if !strings.Contains(before, "`"+pkg+"`") {
			t.Errorf("README's \"Before you start\" does not name `%s`, which the tests use", pkg)
		}
	}
}
