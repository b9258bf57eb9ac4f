package rootfstest

import (
	"strings"

	"github.com/ucmfs/ucmfs/tiers/rootfs"
	"golang.org/x/sys/unix"
)

// renameOp is an Op of Rename(from, to, flags).
func renameOp(from, to string, flags uint) func(rootfs.FS) (string, error) {
	return just(func(fsys rootfs.FS) error { return fsys.Rename(from, to, flags) })
}

// keepsOpen opens rel, runs fn, and reads what the descriptor holds
// after it: a file whose name fn took stays readable.
func keepsOpen(rel string, fn func(fsys rootfs.FS) error) func(rootfs.FS) (string, error) {
	return func(fsys rootfs.FS) (string, error) {
		f, err := fsys.OpenFile(rel, unix.O_RDONLY, 0)
		if err != nil {
			return "", err
		}
		defer f.Close()
		if err := fn(fsys); err != nil {
			return "", err
		}
		return readAt(f, 0)
	}
}

var nameCases = []Case{
	{"mkdir", nil, just(func(fsys rootfs.FS) error { return fsys.Mkdir("a/d", 0o750) })},
	{"mkdir over a file", unix.EEXIST, just(func(fsys rootfs.FS) error { return fsys.Mkdir("a/f", 0o755) })},
	{"mkdir over a directory", unix.EEXIST, just(func(fsys rootfs.FS) error { return fsys.Mkdir("e", 0o755) })},
	{"mkdir in a missing directory", unix.ENOENT, just(func(fsys rootfs.FS) error { return fsys.Mkdir("b/c", 0o755) })},
	{"mkdir of the root", unix.EINVAL, just(func(fsys rootfs.FS) error { return fsys.Mkdir(".", 0o755) })},
	{"names of 255 bytes, and longer", unix.ENAMETOOLONG, func(fsys rootfs.FS) (string, error) {
		long := strings.Repeat("n", 255)
		if err := fsys.MkdirAll("a/"+long+"/"+long, 0o755); err != nil {
			return "", err
		}
		if err := write(fsys, "a/"+long+"/"+long+"/"+long, unix.O_WRONLY|unix.O_CREAT, "x"); err != nil {
			return "", err
		}
		var out []string
		for _, err := range []error{fsys.Mkdir("a/"+long+"n", 0o755), fsys.Rename("a/f", "a/"+long+"n", 0),
			fsys.Link("a/f", "a/"+long+"/"+long+"n"), write(fsys, long+"n/x", unix.O_WRONLY|unix.O_CREAT, "x")} {
			out = append(out, Describe(fsys, err))
		}
		return strings.Join(out, "; "), fsys.Unlink(long + "n")
	}},
	{"MkdirAll", nil, just(func(fsys rootfs.FS) error { return fsys.MkdirAll("x/y/z", 0o700) })},
	{"MkdirAll of a directory there", nil, just(func(fsys rootfs.FS) error { return fsys.MkdirAll("a/sub", 0o700) })},
	{"MkdirAll of the root", nil, just(func(fsys rootfs.FS) error { return fsys.MkdirAll(".", 0o700) })},
	{"MkdirAll through a file", unix.ENOTDIR, just(func(fsys rootfs.FS) error { return fsys.MkdirAll("a/f/y/z", 0o755) })},
	{"MkdirAll over a file", unix.ENOTDIR, just(func(fsys rootfs.FS) error { return fsys.MkdirAll("top", 0o755) })},
	{"unlink", nil, just(func(fsys rootfs.FS) error { return fsys.Unlink("a/f") })},
	{"unlink of a missing file", unix.ENOENT, just(func(fsys rootfs.FS) error { return fsys.Unlink("a/x") })},
	{"unlink of a directory", unix.EISDIR, just(func(fsys rootfs.FS) error { return fsys.Unlink("e") })},
	{"unlink beneath a file", unix.ENOTDIR, just(func(fsys rootfs.FS) error { return fsys.Unlink("top/x") })},
	{"unlink of a file open", nil, keepsOpen("a/f", func(fsys rootfs.FS) error { return fsys.Unlink("a/f") })},
	{"rmdir", nil, just(func(fsys rootfs.FS) error { return fsys.Rmdir("e") })},
	{"rmdir of a directory not empty", unix.ENOTEMPTY, just(func(fsys rootfs.FS) error { return fsys.Rmdir("a") })},
	{"rmdir of a file", unix.ENOTDIR, just(func(fsys rootfs.FS) error { return fsys.Rmdir("top") })},
	{"rmdir of a missing directory", unix.ENOENT, just(func(fsys rootfs.FS) error { return fsys.Rmdir("b") })},
	{"rmdir of the root", unix.EINVAL, just(func(fsys rootfs.FS) error { return fsys.Rmdir(".") })},
	{"RemoveAll", nil, keepsOpen("a/sub/h", func(fsys rootfs.FS) error { return fsys.RemoveAll("a") })},
	{"RemoveAll of a file", nil, just(func(fsys rootfs.FS) error { return fsys.RemoveAll("top") })},
	{"RemoveAll of a missing path", nil, just(func(fsys rootfs.FS) error { return fsys.RemoveAll("b/c") })},
	{"RemoveAll beneath a file", unix.ENOTDIR, just(func(fsys rootfs.FS) error { return fsys.RemoveAll("top/x") })},
	{"RemoveAll of the root", unix.EINVAL, just(func(fsys rootfs.FS) error { return fsys.RemoveAll(".") })},
	{"rename a file", nil, renameOp("a/f", "e/f", 0)},
	{"rename a directory", nil, renameOp("a/sub", "e/sub", 0)},
	{"rename over a file open", nil, keepsOpen("a/g", func(fsys rootfs.FS) error { return fsys.Rename("a/f", "a/g", 0) })},
	{"rename to its own name", nil, renameOp("a/f", "a/f", 0)},
	{"rename between two names of one file", nil, func(fsys rootfs.FS) (string, error) {
		if err := fsys.Link("a/f", "a/l"); err != nil {
			return "", err
		}
		return "", fsys.Rename("a/f", "a/l", 0)
	}},
	{"rename of a missing file", unix.ENOENT, renameOp("a/x", "a/y", 0)},
	{"rename into a missing directory", unix.ENOENT, renameOp("a/f", "b/f", 0)},
	{"rename beneath a file", unix.ENOTDIR, renameOp("a/f", "top/f", 0)},
	{"rename a directory over a file", unix.ENOTDIR, renameOp("e", "top", 0)},
	{"rename a file over a directory", unix.EISDIR, renameOp("top", "e", 0)},
	{"rename a directory over an empty one", nil, renameOp("a/sub", "e", 0)},
	{"rename a directory over one not empty", unix.ENOTEMPTY, renameOp("e", "a", 0)},
	{"rename a directory into itself", unix.EINVAL, renameOp("a", "a/sub/a", 0)},
	{"rename a directory onto its parent", unix.ENOTEMPTY, renameOp("a/sub", "a", 0)},
	{"rename of the root", unix.EINVAL, renameOp(".", "x", 0)},
	{"rename onto the root", unix.EINVAL, renameOp("top", ".", 0)},
	{"RENAME_NOREPLACE to a free name", nil, renameOp("a/f", "a/n", unix.RENAME_NOREPLACE)},
	{"RENAME_NOREPLACE over a file", unix.EEXIST, renameOp("a/f", "a/g", unix.RENAME_NOREPLACE)},
	{"RENAME_NOREPLACE to its own name", unix.EEXIST, renameOp("a/f", "a/f", unix.RENAME_NOREPLACE)},
	{"RENAME_EXCHANGE of a file and a directory", nil, renameOp("a/f", "e", unix.RENAME_EXCHANGE)},
	{"RENAME_EXCHANGE of two files", nil, renameOp("a/f", "top", unix.RENAME_EXCHANGE)},
	{"RENAME_EXCHANGE with a missing name", unix.ENOENT, renameOp("a/f", "a/x", unix.RENAME_EXCHANGE)},
	{"RENAME_EXCHANGE of a directory and its parent", unix.EINVAL, renameOp("a/sub", "a", unix.RENAME_EXCHANGE)},
	{"RENAME_NOREPLACE with RENAME_EXCHANGE", unix.EINVAL, renameOp("a/f", "a/g", unix.RENAME_NOREPLACE|unix.RENAME_EXCHANGE)},
	{"link", nil, just(func(fsys rootfs.FS) error { return fsys.Link("a/f", "e/l") })},
	{"link writes reach both names", nil, func(fsys rootfs.FS) (string, error) {
		if err := fsys.Link("a/f", "l"); err != nil {
			return "", err
		}
		return "", write(fsys, "l", unix.O_WRONLY, "L")
	}},
	{"link of a file with its name gone", nil, keepsOpen("a/f", func(fsys rootfs.FS) error {
		if err := fsys.LinkOnce("a/f", "a/l"); err != nil {
			return err
		}
		return fsys.Unlink("a/f")
	})},
	{"link over a name", unix.EEXIST, just(func(fsys rootfs.FS) error { return fsys.Link("a/f", "a/g") })},
	{"link of a directory", unix.EPERM, just(func(fsys rootfs.FS) error { return fsys.Link("e", "l") })},
	{"link of a missing file", unix.ENOENT, just(func(fsys rootfs.FS) error { return fsys.Link("a/x", "l") })},
	{"link into a missing directory", unix.ENOENT, just(func(fsys rootfs.FS) error { return fsys.Link("a/f", "b/l") })},
	{"a directory's mtime moves with its names", nil, func(fsys rootfs.FS) (string, error) {
		var out string
		for _, step := range []func() error{
			func() error { return fsys.WriteFile("e/x", nil, 0o600) },
			func() error { return fsys.Link("e/x", "e/y") },
			func() error { return fsys.Rename("e/y", "e/z", 0) },
			func() error { return fsys.Unlink("e/x") },
			func() error { return fsys.Mkdir("e/d", 0o755) },
			func() error { return fsys.Rmdir("e/d") },
		} {
			moved, err := mtimeMoves(fsys, "e", step)
			if err != nil {
				return out, err
			}
			out += moved + "; "
		}
		moved, err := mtimeMoves(fsys, "a", func() error { return fsys.Rename("a/f", "e/f", 0) })
		return out + "source " + moved, err
	}},
}
