package lint

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// errnoName is the name of an errno constant of syscall or x/sys/unix.
var errnoName = regexp.MustCompile(`^E[A-Z0-9]+$`)

// errnoFiles returns, for the non-test files of the package in dir, the
// files that name an errno constant (syscall.EINVAL, unix.ENOENT, ...).
func errnoFiles(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	fset := token.NewFileSet()
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if pkg, ok := sel.X.(*ast.Ident); ok && (pkg.Name == "syscall" || pkg.Name == "unix") && errnoName.MatchString(sel.Sel.Name) {
				found = true
			}
			return !found
		})
		if found {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// TestErrnoInOnePlace: errors become errnos at the FUSE boundary only.
// The kernel-agnostic packages (store, control, vfs) name no errno, and
// at most two files of the adapter do: its translation table (errno.go) and the
// mount-time checks (mount.go).
func TestErrnoInOnePlace(t *testing.T) {
	root := filepath.Join("..", "..")
	for _, pkg := range []string{"store", "control", "control/line", "transfer", "metrics", "fs/light", "fs/conn", "fs/scratch", "fs/ucmdir", "fs/pending", "vfs"} {
		if files := errnoFiles(t, filepath.Join(root, pkg)); len(files) > 0 {
			t.Errorf("%s names errno constants in %v: return a Go error or sentinel; package fs decides the errno", pkg, files)
		}
	}
	files := errnoFiles(t, filepath.Join(root, "fs"))
	allowed := map[string]bool{"errno.go": true, "mount.go": true}
	for _, f := range files {
		if !allowed[f] {
			t.Errorf("fs/%s names an errno constant: return a sentinel and let errno.go map it", f)
		}
	}
	if len(files) > 2 {
		t.Errorf("%d files of fs name errno constants: %v (at most 2)", len(files), files)
	}
}
