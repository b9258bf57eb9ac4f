package rootfstest

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
	"unsafe"

	"github.com/ucmfs/ucmfs/tiers/rootfs"
	"golang.org/x/sys/unix"
)

// Cases is the table: the operations of rootfs.FS, each on what the
// tiers meet (a missing name, a file where a directory is looked for, a
// directory where a file is, a name taken, a file open while its name
// goes) and on the paths the Root refuses.
var Cases = concat(openCases, nameCases, statCases)

func concat(parts ...[]Case) []Case {
	var all []Case
	for _, p := range parts {
		all = append(all, p...)
	}
	return all
}

// just is an Op of an operation that returns only an error.
func just(fn func(fsys rootfs.FS) error) func(rootfs.FS) (string, error) {
	return func(fsys rootfs.FS) (string, error) { return "", fn(fsys) }
}

// write opens rel with flag (perm 0o666 when it creates) and writes s.
func write(fsys rootfs.FS, rel string, flag int, s string) error {
	f, err := fsys.OpenFile(rel, flag, 0o666)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.WriteString(s)
	return err
}

// readAt reads what f holds from off.
func readAt(f *os.File, off int64) (string, error) {
	b, err := io.ReadAll(io.NewSectionReader(f, off, 1<<20))
	return string(b), err
}

var openCases = []Case{
	{"open missing", unix.ENOENT, just(func(fsys rootfs.FS) error { return write(fsys, "a/x", unix.O_WRONLY, "x") })},
	{"open beneath a file", unix.ENOTDIR, just(func(fsys rootfs.FS) error { return write(fsys, "a/f/x", unix.O_WRONLY|unix.O_CREAT, "x") })},
	{"open beneath a missing directory", unix.ENOENT, just(func(fsys rootfs.FS) error { return write(fsys, "b/x", unix.O_WRONLY|unix.O_CREAT, "x") })},
	{"create, the umask applied", nil, just(func(fsys rootfs.FS) error {
		return write(fsys, "a/new", unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, "new")
	})},
	{"create with a mode that forbids the open's access", nil, func(fsys rootfs.FS) (string, error) {
		f, err := fsys.OpenFile("a/ro", unix.O_RDWR|unix.O_CREAT|unix.O_EXCL, 0o400)
		if err != nil {
			return "", err
		}
		defer f.Close()
		_, err = f.WriteString("written")
		return "", err
	}},
	{"create exclusive over a file", unix.EEXIST, just(func(fsys rootfs.FS) error {
		return write(fsys, "a/f", unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, "x")
	})},
	{"create exclusive over a directory", unix.EEXIST, just(func(fsys rootfs.FS) error {
		return write(fsys, "e", unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, "x")
	})},
	{"create over a directory", unix.EISDIR, just(func(fsys rootfs.FS) error { return write(fsys, "e", unix.O_WRONLY|unix.O_CREAT, "x") })},
	{"open a directory for writing", unix.EISDIR, just(func(fsys rootfs.FS) error { return write(fsys, "a", unix.O_RDWR, "x") })},
	{"open a file as a directory", unix.ENOTDIR, just(func(fsys rootfs.FS) error {
		return write(fsys, "a/f", unix.O_RDONLY|unix.O_DIRECTORY, "x")
	})},
	{"truncate", nil, just(func(fsys rootfs.FS) error { return write(fsys, "a/f", unix.O_WRONLY|unix.O_TRUNC, "x") })},
	{"append", nil, just(func(fsys rootfs.FS) error { return write(fsys, "a/f", unix.O_WRONLY|unix.O_APPEND, "+") })},
	{"two opens have their own offsets", nil, func(fsys rootfs.FS) (string, error) {
		f1, err := fsys.OpenFile("a/f", unix.O_RDWR, 0)
		if err != nil {
			return "", err
		}
		defer f1.Close()
		f2, err := fsys.OpenFile("a/f", unix.O_RDWR, 0)
		if err != nil {
			return "", err
		}
		defer f2.Close()
		if _, err := f1.WriteString("AB"); err != nil {
			return "", err
		}
		_, err = f2.WriteString("C")
		return "", err
	}},
	{"O_DIRECT write of an aligned block", nil, func(fsys rootfs.FS) (string, error) {
		f, err := fsys.OpenFile("a/d", unix.O_RDWR|unix.O_CREAT|unix.O_DIRECT, 0o600)
		if err != nil {
			return "", err
		}
		defer f.Close()
		b := aligned(4096)
		copy(b, "direct")
		n, err := unix.Pwrite(int(f.Fd()), b, 0)
		return fmt.Sprint(n), err
	}},
	{"O_PATH holds a file its name left", nil, func(fsys rootfs.FS) (string, error) {
		fd, err := fsys.OpenFD("a/f", unix.O_PATH, 0)
		if err != nil {
			return "", err
		}
		defer unix.Close(fd)
		if err := fsys.Unlink("a/f"); err != nil {
			return "", err
		}
		var st unix.Stat_t
		err = unix.Fstat(fd, &st)
		return fmt.Sprintf("size %d", st.Size), err
	}},
	{"OpenRegular of a directory", rootfs.ErrNotRegular, func(fsys rootfs.FS) (string, error) {
		f, err := fsys.OpenRegular("a/sub")
		closeIf(f)
		return "", err
	}},
	{"OpenRegular of a missing file", unix.ENOENT, func(fsys rootfs.FS) (string, error) {
		f, err := fsys.OpenRegular("a/x")
		closeIf(f)
		return "", err
	}},
	{"ReadFile and WriteFile", nil, func(fsys rootfs.FS) (string, error) {
		if err := fsys.WriteFile("a/w", []byte("written"), 0o600); err != nil {
			return "", err
		}
		b, err := fsys.ReadFile("a/w")
		return string(b), err
	}},
	{"ReadFile of a directory", rootfs.ErrNotRegular, func(fsys rootfs.FS) (string, error) {
		b, err := fsys.ReadFile("a")
		return string(b), err
	}},
	{"CreateTemp", nil, func(fsys rootfs.FS) (string, error) {
		f, rel, err := fsys.CreateTemp("a", ".tmp-", 0o600)
		if err != nil {
			return "", err
		}
		f.Close()
		ok := strings.HasPrefix(rel, "a/.tmp-") && len(rel) == len("a/.tmp-")+16
		return fmt.Sprint("named as asked: ", ok), fsys.Rename(rel, "a/t", 0)
	}},
	{"CreateTemp in a missing directory", unix.ENOENT, func(fsys rootfs.FS) (string, error) {
		f, _, err := fsys.CreateTemp("b", ".tmp-", 0o600)
		closeIf(f)
		var pe *os.PathError
		if errors.As(err, &pe) {
			pe.Path = pe.Path[:len(pe.Path)-16] + "*" // the random part
		}
		return "", err
	}},
	{"SyncFile and SyncDir", nil, func(fsys rootfs.FS) (string, error) {
		f, err := fsys.OpenFile("a/f", unix.O_WRONLY, 0)
		if err != nil {
			return "", err
		}
		defer f.Close()
		return "", errors.Join(fsys.SyncFile(f), fsys.SyncDir("a"), fsys.SyncDir("."), fsys.Syncfs())
	}},
	{"SyncDir of a file", unix.ENOTDIR, just(func(fsys rootfs.FS) error { return fsys.SyncDir("top") })},
	{"SyncDir of a missing directory", unix.ENOENT, just(func(fsys rootfs.FS) error { return fsys.SyncDir("b") })},
	{"every operation after Close", unix.EBADF, func(fsys rootfs.FS) (string, error) {
		fsys.Close()
		var st unix.Stat_t
		var out []string
		for _, err := range []error{fsys.Mkdir("x", 0o755), fsys.Lstat("a", &st), fsys.Unlink("top"),
			fsys.Rename("a/f", "x", 0), fsys.Statfs(new(unix.Statfs_t))} {
			out = append(out, Describe(fsys, err))
		}
		return strings.Join(out, "; "), fsys.Rmdir("e")
	}},
	{"a path that is not clean and relative", unix.EXDEV, func(fsys rootfs.FS) (string, error) {
		var out []string
		for _, bad := range []string{"", "/x", "../x", "a/../x", "a//x", "a/./x", "a/"} {
			out = append(out, Describe(fsys, fsys.Mkdir(bad, 0o755)))
		}
		f, err := fsys.OpenFile("../top", unix.O_RDONLY, 0)
		closeIf(f)
		out = append(out, Describe(fsys, fsys.Rename("top", "../x", 0)), fmt.Sprint("counted ", fsys.Links()))
		return strings.Join(out, "; "), err
	}},
}

func closeIf(f *os.File) {
	if f != nil {
		f.Close()
	}
}

// aligned is n bytes at a 4096-byte boundary (for O_DIRECT).
func aligned(n int) []byte {
	b := make([]byte, n+4096)
	off := int(uintptr(unsafe.Pointer(&b[0])) & 4095)
	if off != 0 {
		off = 4096 - off
	}
	return b[off : off+n]
}

// mtimeMoves sets the directory dir's times an hour back, runs fn, and
// says whether its mtime moved.
func mtimeMoves(fsys rootfs.FS, dir string, fn func() error) (string, error) {
	past := time.Now().Add(-time.Hour)
	if err := fsys.Chtimes(dir, past, past); err != nil {
		return "", err
	}
	if err := fn(); err != nil {
		return "", err
	}
	var st unix.Stat_t
	if err := fsys.Stat(dir, &st); err != nil {
		return "", err
	}
	return fmt.Sprint("moved ", st.Mtim.Sec > past.Unix()), nil
}
