package lint

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// pathCalls are the functions of os, syscall and golang.org/x/sys/unix
// that take a path (or a path relative to a directory descriptor) and
// resolve it with the kernel's usual rules, following symbolic links.
// Inside the tiers' packages every path beneath a tier's root goes through
// package tiers/rootfs instead (beneath the held root, no link followed:
// docs/design.md, "Paths beneath a tier's root").
var pathCalls = map[string]bool{
	"Open": true, "OpenFile": true, "Create": true, "CreateTemp": true, "MkdirTemp": true,
	"Mkdir": true, "MkdirAll": true, "Remove": true, "RemoveAll": true, "Rename": true,
	"Stat": true, "Lstat": true, "ReadDir": true, "ReadFile": true, "WriteFile": true,
	"Chmod": true, "Chown": true, "Lchown": true, "Chtimes": true, "Link": true, "Symlink": true,
	"Readlink": true, "Truncate": true, "DirFS": true, "OpenRoot": true,
	"Openat": true, "Openat2": true, "Mkdirat": true, "Renameat": true, "Renameat2": true,
	"Unlinkat": true, "Unlink": true, "Rmdir": true, "Fstatat": true, "Linkat": true,
	"Symlinkat": true, "Readlinkat": true, "Fchmodat": true, "Fchownat": true,
	"UtimesNanoAt": true, "UtimesNano": true, "Utimes": true, "Utime": true, "Access": true,
	"Faccessat": true, "Faccessat2": true, "Statfs": true, "Statx": true, "Mknod": true, "Mknodat": true,
	"Getxattr": true, "Setxattr": true, "Listxattr": true, "Removexattr": true,
	"Lgetxattr": true, "Lsetxattr": true, "Llistxattr": true, "Lremovexattr": true,
	"Mount": true, "Unmount": true, "Chdir": true, "Chroot": true, "Name_to_handle_at": true,
}

// tierPackages are the packages the rule holds in, by their folder
// beneath tiers: the stack, the tiers and what they share (not
// tiers/rootfs, which makes the calls for them, nor tiers/index, which
// makes none).
var tierPackages = []string{".", "tier", "mem", "dir"}

// pathCallsAllowed are the calls in the tierPackages that name paths
// outside every tier's root, each with why, by the file's path beneath
// tiers.
var pathCallsAllowed = map[string]string{
	"dir/eintr.go:unix.Lstat":       "lstat of paths an operator names (locate.go)",
	"dir/lock_stuck.go:os.ReadFile": "/proc/locks and /proc/<pid>/stat",
	"dir/lock_stuck.go:os.OpenFile": "the abort file of a FUSE connection under /sys/fs/fuse/connections",
	"mem/lockq.go:os.ReadFile":      "/proc/swaps",
	"mem/dir.go:unix.Statfs":        "the filesystem type of the memory tier's parent (the administrator's path)",
	"mem/mem.go:unix.Statfs":        "the free space of the memory tier's own private directory",
	"mem/mem.go:os.OpenFile":        "the memory tier's own private directory, made by this daemon",
	"mem/mem.go:os.RemoveAll":       "the memory tier's own private directory, made by this daemon, at Close",
	"mem/private.go:os.MkdirTemp":   "the mount point of the private tmpfs, in the administrator's directory",
	"mem/private.go:os.Remove":      "the mount point of the private tmpfs",
	"mem/private.go:os.Open":        "the private tmpfs's root, right after its mount",
	"mem/private.go:unix.Mount":     "the private tmpfs",
	"mem/private.go:unix.Unmount":   "the private tmpfs, detached at once",
}

// TestTierPathsBeneathRoot fails on a path-taking call of os, syscall or
// unix in the tierPackages that is not in pathCallsAllowed.
func TestTierPathsBeneathRoot(t *testing.T) {
	var files []string
	for _, dir := range tierPackages {
		in, err := filepath.Glob(filepath.Join("../../tiers", dir, "*.go"))
		if err != nil || len(in) == 0 {
			t.Fatalf("no sources in tiers/%s: %v", dir, err)
		}
		files = append(files, in...)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		pkgs := map[string]string{} // local name -> import path
		for _, imp := range f.Imports {
			p := strings.Trim(imp.Path.Value, `"`)
			local := filepath.Base(p)
			if imp.Name != nil {
				local = imp.Name.Name
			}
			pkgs[local] = p
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			id, ok := sel.X.(*ast.Ident)
			if !ok || !pathCalls[sel.Sel.Name] {
				return true
			}
			switch pkgs[id.Name] {
			case "os", "syscall", "golang.org/x/sys/unix":
			default:
				return true
			}
			rel, _ := filepath.Rel("../../tiers", name) // mem.go, tier/lock.go
			key := rel + ":" + id.Name + "." + sel.Sel.Name
			if _, ok := pathCallsAllowed[key]; !ok {
				t.Errorf("%s: %s.%s resolves a path as the kernel does, links followed: go through package tiers/rootfs (or add it to pathCallsAllowed with why)",
					fset.Position(sel.Pos()), id.Name, sel.Sel.Name)
			}
			return true
		})
	}
}
