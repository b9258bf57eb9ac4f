package lint

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// mapRow is a row of docs/design.md's package map: "| `pkg` | job |
// `imp`, `imp` |" (or "none").
var mapRow = regexp.MustCompile("^\\| `([^`]+)` \\| [^|]+ \\| ([^|]+) \\|$")

// TestDesignMap: the package map of docs/design.md names every package of
// the module once, and for each the packages of ours its code imports
// (non-test files), exactly as go list reports them.
func TestDesignMap(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "design.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	start := strings.Index(text, "<!-- package map")
	end := strings.Index(text, "<!-- end of package map -->")
	if start < 0 || end < start {
		t.Fatal("docs/design.md has no package map between its markers")
	}
	documented := map[string][]string{}
	for _, line := range strings.Split(text[start:end], "\n") {
		m := mapRow.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		if _, dup := documented[m[1]]; dup {
			t.Errorf("design.md names %s twice", m[1])
		}
		var imps []string
		if s := strings.TrimSpace(m[2]); s != "none" {
			for _, f := range strings.Split(s, ",") {
				imps = append(imps, strings.Trim(strings.TrimSpace(f), "`"))
			}
		}
		slices.Sort(imps)
		documented[m[1]] = imps
	}
	for pkg, imps := range imports(t) {
		var ours []string
		for _, imp := range imps {
			if strings.HasPrefix(imp, mod) {
				ours = append(ours, strings.TrimPrefix(imp, mod))
			}
		}
		slices.Sort(ours)
		doc, ok := documented[pkg]
		if !ok {
			t.Errorf("package %s is missing from the map of docs/design.md", pkg)
			continue
		}
		delete(documented, pkg)
		if !slices.Equal(doc, ours) {
			t.Errorf("docs/design.md says %s imports %v; it imports %v", pkg, doc, ours)
		}
	}
	for pkg := range documented {
		t.Errorf("docs/design.md maps %s, which is no package of the module", pkg)
	}
}
