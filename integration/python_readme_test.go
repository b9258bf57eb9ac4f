package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPythonReadme runs python/README.md's Python examples as they are
// written, each a program of its own, against a real mount (its path the
// one argument): the first finds none of its blocks cached and stores
// them, a second run finds them all.
func TestPythonReadme(t *testing.T) {
	requireTool(t, "python3")
	readme, err := os.ReadFile(filepath.Join(pythonDir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	examples := codeBlocks(string(readme), "python")
	if len(examples) < 2 {
		t.Fatalf("python/README.md has %d python examples, want 2", len(examples))
	}
	d := mountUCM(t, mountOpts{})
	dir := testDir(t)
	wants := [][]string{{"0 of 4 blocks were cached", "4 of 4 blocks were cached"}}
	for i, code := range examples {
		prog := filepath.Join(dir, "example.py")
		if err := os.WriteFile(prog, []byte(code), 0o644); err != nil {
			t.Fatal(err)
		}
		for run := range 2 {
			out := runCode(t, prog, d.Mnt)
			if i < len(wants) && !strings.Contains(out, wants[i][run]) {
				t.Errorf("example %d, run %d printed %q, want %q", i+1, run+1, out, wants[i][run])
			}
		}
	}
}

// runCode runs the Python program prog with the package of this
// checkout and the argument mnt, and returns its output; it fails the test
// with its stderr where it fails.
func runCode(t *testing.T, prog, mnt string) string {
	t.Helper()
	return run(t, []string{"PYTHONPATH=" + pythonDir, "PYTHONDONTWRITEBYTECODE=1"}, "python3", prog, mnt)
}

// codeBlocks are the fenced code blocks of markdown text in language
// lang, in order.
func codeBlocks(text, lang string) []string {
	var out []string
	var cur *strings.Builder
	for _, line := range strings.Split(text, "\n") {
		switch {
		case cur == nil && strings.TrimSpace(line) == "```"+lang:
			cur = &strings.Builder{}
		case cur != nil && strings.TrimSpace(line) == "```":
			out = append(out, cur.String())
			cur = nil
		case cur != nil:
			cur.WriteString(line + "\n")
		}
	}
	return out
}
