package rootfstest

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ucmfs/ucmfs/tiers/rootfs"
	"golang.org/x/sys/unix"
)

// statOf describes rel's Stat: type and mode, and for a file its size
// and number of names (a directory's size and link count differ between
// filesystems).
func statOf(fsys rootfs.FS, rel string) (string, error) {
	var st unix.Stat_t
	if err := fsys.Stat(rel, &st); err != nil {
		return "", err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return fmt.Sprintf("directory %o", st.Mode&0o7777), nil
	}
	return fmt.Sprintf("file %o size %d names %d", st.Mode&0o7777, st.Size, st.Nlink), nil
}

// xattr sets name on the file rel through a descriptor (as the tiers do)
// and reads it back through the FS with a buffer of n bytes.
func xattr(fsys rootfs.FS, rel, name string, n int) (string, error) {
	f, err := fsys.OpenFile(rel, unix.O_RDWR, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if err := unix.Fsetxattr(int(f.Fd()), name, []byte("crc"), 0); err != nil {
		return "", err
	}
	buf := make([]byte, n)
	m, err := fsys.Getxattr(rel, name, buf)
	return string(buf[:max(m, 0)]), err
}

var statCases = []Case{
	{"stat of a file", nil, func(fsys rootfs.FS) (string, error) { return statOf(fsys, "a/f") }},
	{"stat of a directory", nil, func(fsys rootfs.FS) (string, error) { return statOf(fsys, "a") }},
	{"stat of the root", nil, func(fsys rootfs.FS) (string, error) { return statOf(fsys, ".") }},
	{"stat of a missing name", unix.ENOENT, func(fsys rootfs.FS) (string, error) { return statOf(fsys, "a/x") }},
	{"stat beneath a file", unix.ENOTDIR, func(fsys rootfs.FS) (string, error) { return statOf(fsys, "top/x") }},
	{"stat of a file of two names", nil, func(fsys rootfs.FS) (string, error) {
		if err := fsys.Link("a/f", "l"); err != nil {
			return "", err
		}
		return statOf(fsys, "l")
	}},
	{"stat and fstat of a descriptor agree", nil, func(fsys rootfs.FS) (string, error) {
		f, err := fsys.OpenRegular("a/f")
		if err != nil {
			return "", err
		}
		defer f.Close()
		var held, named unix.Stat_t
		if err := unix.Fstat(int(f.Fd()), &held); err != nil {
			return "", err
		}
		err = fsys.Lstat("a/f", &named)
		return fmt.Sprint("same file ", held.Dev == named.Dev && held.Ino == named.Ino,
			", same size ", held.Size == named.Size, ", same mtime ", held.Mtim == named.Mtim), err
	}},
	{"Chtimes of a file and a directory", nil, func(fsys rootfs.FS) (string, error) {
		when := time.Unix(1000, 500)
		var out []string
		for _, rel := range []string{"a/f", "e"} {
			var st unix.Stat_t
			err := fsys.Chtimes(rel, when, when)
			if err == nil {
				err = fsys.Stat(rel, &st)
			}
			if err != nil {
				return "", err
			}
			out = append(out, fmt.Sprint(st.Mtim, st.Atim))
		}
		return strings.Join(out, "; "), nil
	}},
	{"Chtimes of the root", unix.EINVAL, just(func(fsys rootfs.FS) error { return fsys.Chtimes(".", time.Unix(1, 0), time.Unix(1, 0)) })},
	{"Chtimes of a missing name", unix.ENOENT, just(func(fsys rootfs.FS) error { return fsys.Chtimes("a/x", time.Unix(1, 0), time.Unix(1, 0)) })},
	{"xattr set through a descriptor, read by name", nil, func(fsys rootfs.FS) (string, error) { return xattr(fsys, "a/f", "user.ucm.crc", 64) }},
	{"xattr read into too small a buffer", unix.ERANGE, func(fsys rootfs.FS) (string, error) { return xattr(fsys, "a/f", "user.ucm.crc", 1) }},
	{"xattr not set", unix.ENODATA, func(fsys rootfs.FS) (string, error) {
		n, err := fsys.Getxattr("a/f", "user.none", make([]byte, 8))
		return fmt.Sprint(n), err
	}},
	{"xattr of a directory", unix.ENODATA, func(fsys rootfs.FS) (string, error) {
		n, err := fsys.Getxattr(".", "user.none", make([]byte, 8))
		return fmt.Sprint(n), err
	}},
	{"xattr of a missing file", unix.ENOENT, func(fsys rootfs.FS) (string, error) {
		n, err := fsys.Getxattr("a/x", "user.none", make([]byte, 8))
		return fmt.Sprint(n), err
	}},
	{"Statfs", nil, func(fsys rootfs.FS) (string, error) {
		var st unix.Statfs_t
		err := fsys.Statfs(&st)
		return fmt.Sprint("blocks ", st.Blocks > 0, ", free at most all ", st.Bavail <= st.Blocks, ", block size ", st.Bsize > 0), err
	}},
	{"ReadDir", nil, func(fsys rootfs.FS) (string, error) {
		ents, err := fsys.ReadDir("a")
		if err != nil {
			return "", err
		}
		var out []string
		for _, e := range ents {
			fi, err := e.Info()
			if err != nil {
				return "", err
			}
			s := fmt.Sprintf("%s dir %v mode %v", e.Name(), e.IsDir(), fi.Mode())
			if !e.IsDir() {
				s += fmt.Sprint(" size ", fi.Size())
			}
			out = append(out, s)
		}
		return sorted(out), nil
	}},
	{"ReadDirNames, ReadDirAll and ReadDirStat", nil, func(fsys rootfs.FS) (string, error) {
		names, err := fsys.ReadDirNames(".")
		if err != nil {
			return "", err
		}
		all, err := fsys.ReadDirAll("a")
		if err != nil {
			return "", err
		}
		sts, err := fsys.ReadDirStat("a/sub")
		if err != nil {
			return "", err
		}
		var st []string
		for _, s := range sts {
			st = append(st, fmt.Sprintf("%s %o %d", s.Name, s.Mode, s.Size))
		}
		return sorted(names) + " | " + sorted(all) + " | " + sorted(st), nil
	}},
	{"ReadDir of a file", unix.ENOTDIR, func(fsys rootfs.FS) (string, error) {
		ents, err := fsys.ReadDir("top")
		return fmt.Sprint(len(ents)), err
	}},
	{"ReadDir of a missing directory", unix.ENOENT, func(fsys rootfs.FS) (string, error) {
		names, err := fsys.ReadDirNames("b")
		return fmt.Sprint(len(names)), err
	}},
	{"ReadDirStat of an empty directory", nil, func(fsys rootfs.FS) (string, error) {
		sts, err := fsys.ReadDirStat("e")
		return fmt.Sprint(len(sts)), err
	}},
}

// sorted is the lines sorted, joined by commas.
func sorted(lines []string) string {
	out := slices.Clone(lines)
	slices.Sort(out)
	return strings.Join(out, ", ")
}
