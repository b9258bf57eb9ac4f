// Package rootfstest is test support for the implementations of
// rootfs.FS (the real rootfs.Root, crashfs over a scratch directory,
// memfs in memory): one table of operations, Cases, each run on a fresh
// filesystem holding the same small tree (Seed), and its outcome (the
// error, what the case saw through its descriptors, and the tree left,
// read through a second open of the filesystem, as after a restart)
// compared between the implementations. The real Root, over a directory
// of the kernel's, is the reference: what it does is what a filesystem
// under the tiers does.
package rootfstest

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/ucmfs/ucmfs/tiers/rootfs"
	"golang.org/x/sys/unix"
)

// Case is one row of the table.
type Case struct {
	Name string
	// Want is the error Op fails with (errors.Is), nil when it succeeds.
	Want error
	// Op runs on a filesystem holding Seed's tree; what it returns beside
	// its error (what it saw) is part of the outcome.
	Op func(fsys rootfs.FS) (string, error)
}

// Impl is an implementation under test: New makes an empty filesystem
// for one case (in t's temporary directory, or in memory) and returns
// how to open it; each call opens it again.
type Impl struct {
	Name string
	New  func(t *testing.T) (open func() (rootfs.FS, error))
}

// Run runs every case of Cases on every implementation, and fails where
// an outcome is not its case's Want or differs from the first
// implementation's.
func Run(t *testing.T, impls ...Impl) {
	for _, c := range Cases {
		t.Run(c.Name, func(t *testing.T) {
			var ref string
			for i, im := range impls {
				got, err := Outcome(im.New(t), c)
				if err != nil {
					t.Fatalf("%s: %v", im.Name, err)
				}
				if i == 0 {
					ref = got
					t.Logf("%s:\n%s", im.Name, got)
					continue
				}
				if got != ref {
					t.Errorf("%s differs from %s:\n--- %s\n%s\n--- %s\n%s", im.Name, impls[0].Name, impls[0].Name, ref, im.Name, got)
				}
			}
		})
	}
}

// Outcome seeds a filesystem of open, runs c on it, checks c.Want, and
// describes the outcome: the error, what c saw, and the tree left (read
// through a second open). err is a failure of the run itself.
func Outcome(open func() (rootfs.FS, error), c Case) (string, error) {
	fsys, err := open()
	if err != nil {
		return "", fmt.Errorf("open: %w", err)
	}
	if err := Seed(fsys); err != nil {
		fsys.Close()
		return "", fmt.Errorf("seed: %w", err)
	}
	saw, opErr := c.Op(fsys)
	out := Describe(fsys, opErr)
	fsys.Close()
	if c.Want == nil && opErr != nil || c.Want != nil && !errors.Is(opErr, c.Want) {
		return "", fmt.Errorf("%s: %s, want %v", c.Name, out, c.Want)
	}
	again, err := open()
	if err != nil {
		return "", fmt.Errorf("open again: %w", err)
	}
	defer again.Close()
	tree, err := Tree(again)
	if err != nil {
		return "", fmt.Errorf("tree: %w", err)
	}
	return "error: " + out + "\nsaw: " + saw + "\n" + tree, nil
}

// Seed makes the tree every case starts from.
func Seed(fsys rootfs.FS) error {
	for _, d := range []string{"a/sub", "e"} {
		if err := fsys.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	for _, f := range []string{"a/f", "a/g", "a/sub/h", "top"} {
		if err := fsys.WriteFile(f, []byte("data-"+f), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Describe is err with the paths in it relative to fsys's root and errnos
// by name ("ok" for nil): an error every implementation gives alike.
func Describe(fsys rootfs.FS, err error) string {
	if err == nil {
		return "ok"
	}
	var parts []string
	for err != nil {
		switch e := err.(type) {
		case *os.PathError:
			parts, err = append(parts, e.Op+" "+rel(fsys, e.Path)), e.Err
		case *os.SyscallError:
			parts, err = append(parts, e.Syscall), e.Err
		case unix.Errno:
			parts, err = append(parts, unix.ErrnoName(e)), nil
		default:
			parts, err = append(parts, e.Error()), nil
		}
	}
	return strings.Join(parts, ": ")
}

// rel is the path p relative to fsys's root.
func rel(fsys rootfs.FS, p string) string {
	if p == fsys.Name() {
		return "."
	}
	return strings.TrimPrefix(p, fsys.Name()+"/")
}

// Tree describes everything beneath fsys's root, a line a path, sorted:
// a directory with its mode; a file with its mode, size, number of
// names, bytes, and which file it is (#1, #2, ... in the order met: two
// names of one file have one number).
func Tree(fsys rootfs.FS) (string, error) {
	var lines []string
	files := map[[2]uint64]int{}
	var walk func(dir string) error
	walk = func(dir string) error {
		ents, err := fsys.ReadDirStat(dir)
		if err != nil {
			return err
		}
		slices.SortFunc(ents, func(a, b rootfs.Stat) int { return strings.Compare(a.Name, b.Name) })
		for _, e := range ents {
			p := join(dir, e.Name)
			if e.Mode&unix.S_IFMT == unix.S_IFDIR {
				lines = append(lines, fmt.Sprintf("%s/ %o", p, e.Mode&0o7777))
				if err := walk(p); err != nil {
					return err
				}
				continue
			}
			id := [2]uint64{e.Dev, e.Ino}
			if files[id] == 0 {
				files[id] = len(files) + 1
			}
			b, err := fsys.ReadFile(p)
			if err != nil {
				return err
			}
			lines = append(lines, fmt.Sprintf("%s %o size %d names %d #%d %q", p, e.Mode&0o7777, e.Size, e.Nlink, files[id], b))
		}
		return nil
	}
	err := walk(".")
	return strings.Join(lines, "\n"), err
}

func join(dir, name string) string {
	if dir == "." {
		return name
	}
	return dir + "/" + name
}
