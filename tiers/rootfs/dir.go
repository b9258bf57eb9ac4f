package rootfs

import (
	"errors"
	"io/fs"
	"time"

	"golang.org/x/sys/unix"
)

// Entry is one entry of a directory ReadDir listed: never a link.
type Entry struct {
	name string
	typ  fs.FileMode // type bits only
	fs   FS          // the filesystem listed
	rel  string      // the entry's path beneath its root
}

var _ fs.DirEntry = Entry{}

// NewEntry is the entry name, of type typ (type bits only), of the
// directory dir beneath fsys's root: for the FS implementations other
// than Root (its Info is fsys's Lstat of dir/name).
func NewEntry(fsys FS, dir, name string, typ fs.FileMode) Entry {
	return Entry{name: name, typ: typ.Type(), fs: fsys, rel: join(dir, name)}
}

// Name is the entry's name.
func (e Entry) Name() string { return e.name }

// IsDir reports a directory.
func (e Entry) IsDir() bool { return e.typ.IsDir() }

// Type is the entry's type bits (0 for a regular file).
func (e Entry) Type() fs.FileMode { return e.typ }

// Info describes the entry now (an lstat beneath the root).
func (e Entry) Info() (fs.FileInfo, error) {
	var st unix.Stat_t
	if err := e.fs.Lstat(e.rel, &st); err != nil {
		return nil, err
	}
	return fileInfo{name: e.name, st: st}, nil
}

// fileInfo is an fs.FileInfo of a stat result.
type fileInfo struct {
	name string
	st   unix.Stat_t
}

func (fi fileInfo) Name() string       { return fi.name }
func (fi fileInfo) Size() int64        { return fi.st.Size }
func (fi fileInfo) Mode() fs.FileMode  { return modeOf(fi.st.Mode) }
func (fi fileInfo) ModTime() time.Time { return time.Unix(fi.st.Mtim.Sec, fi.st.Mtim.Nsec) }
func (fi fileInfo) IsDir() bool        { return fi.st.Mode&unix.S_IFMT == unix.S_IFDIR }
func (fi fileInfo) Sys() any           { return &fi.st }

// modeOf is the fs.FileMode of a stat mode.
func modeOf(m uint32) fs.FileMode {
	mode := fs.FileMode(m & 0o777)
	switch m & unix.S_IFMT {
	case unix.S_IFDIR:
		mode |= fs.ModeDir
	case unix.S_IFLNK:
		mode |= fs.ModeSymlink
	case unix.S_IFIFO:
		mode |= fs.ModeNamedPipe
	case unix.S_IFSOCK:
		mode |= fs.ModeSocket
	case unix.S_IFCHR:
		mode |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		mode |= fs.ModeDevice
	}
	if m&unix.S_ISUID != 0 {
		mode |= fs.ModeSetuid
	}
	if m&unix.S_ISGID != 0 {
		mode |= fs.ModeSetgid
	}
	if m&unix.S_ISVTX != 0 {
		mode |= fs.ModeSticky
	}
	return mode
}

// typeOf is the type bits of a dirent's d_type.
func typeOf(t uint8) (fs.FileMode, bool) {
	switch t {
	case unix.DT_REG:
		return 0, true
	case unix.DT_DIR:
		return fs.ModeDir, true
	case unix.DT_LNK:
		return fs.ModeSymlink, true
	case unix.DT_FIFO:
		return fs.ModeNamedPipe, true
	case unix.DT_SOCK:
		return fs.ModeSocket, true
	case unix.DT_CHR:
		return fs.ModeDevice | fs.ModeCharDevice, true
	case unix.DT_BLK:
		return fs.ModeDevice, true
	}
	return 0, false
}

// ReadDir lists the directory rel, unsorted, without "." and "..": links
// are left out (and reported), so nothing that lists a tier sees one.
// A type the filesystem does not give (DT_UNKNOWN) is taken from an
// lstat beneath the directory's descriptor.
func (r *Root) ReadDir(rel string) ([]Entry, error) {
	var ents []Entry
	err := r.eachEntry(rel, func(dfd int, name string, typ uint8) error {
		mode, known := typeOf(typ)
		if !known {
			var st unix.Stat_t
			if err := again(func() error { return unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) }); err != nil {
				if errors.Is(err, unix.ENOENT) {
					return nil // gone since the listing
				}
				return err
			}
			mode = modeOf(st.Mode).Type()
		}
		sub := join(rel, name)
		if mode&fs.ModeSymlink != 0 {
			r.met(sub)
			return nil
		}
		ents = append(ents, Entry{name: name, typ: mode, fs: r, rel: sub})
		return nil
	})
	return ents, err
}

// ReadDirNames lists the names in the directory rel, links left out.
func (r *Root) ReadDirNames(rel string) ([]string, error) {
	ents, err := r.ReadDir(rel)
	names := make([]string, len(ents))
	for i, e := range ents {
		names[i] = e.name
	}
	return names, err
}

// join is rel/name ("." the root).
func join(rel, name string) string {
	if rel == "." {
		return name
	}
	return rel + "/" + name
}

// eachEntry calls fn for every entry of the directory rel but "." and
// "..", with the directory's descriptor.
func (r *Root) eachEntry(rel string, fn func(dfd int, name string, typ uint8) error) error {
	dfd, err := r.openat2(rel, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return r.pathErr("open", rel, err)
	}
	defer unix.Close(dfd)
	buf := make([]byte, 32<<10)
	for {
		var n int
		err := again(func() (err error) {
			n, err = unix.Getdents(dfd, buf)
			return err
		})
		if err != nil {
			return r.pathErr("readdirent", rel, err)
		}
		if n <= 0 {
			return nil
		}
		for b := buf[:n]; len(b) >= 19; {
			// struct linux_dirent64: ino u64, off s64, reclen u16, type u8, name.
			reclen := int(b[16]) | int(b[17])<<8
			if reclen < 19 || reclen > len(b) {
				return r.pathErr("readdirent", rel, unix.EIO)
			}
			typ, name := b[18], b[19:reclen]
			for i, c := range name {
				if c == 0 {
					name = name[:i]
					break
				}
			}
			b = b[reclen:]
			if s := string(name); s != "." && s != ".." {
				if err := fn(dfd, s, typ); err != nil {
					return r.pathErr("readdir", rel, err)
				}
			}
		}
	}
}

// RemoveAll removes rel and, if it is a directory, everything beneath
// it, never following a link (a link is removed itself). A missing rel
// is no error.
func (r *Root) RemoveAll(rel string) error {
	err := r.at("remove", rel, func(dfd int, base string) error { return removeAllAt(dfd, base) })
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	return err
}

// removeAllAt removes name in the directory dfd, recursively.
func removeAllAt(dfd int, name string) error {
	err := unix.Unlinkat(dfd, name, 0)
	if err == nil || errors.Is(err, unix.ENOENT) {
		return nil
	}
	if !errors.Is(err, unix.EISDIR) && !errors.Is(err, unix.EPERM) {
		return err
	}
	how := unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC, Resolve: resolve}
	var fd int
	if err := again(func() (err error) { fd, err = unix.Openat2(dfd, name, &how); return err }); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return err
	}
	sub := FromFD(fd, name)
	var errs []error
	for {
		ents, err := sub.ReadDirAll(".")
		if err != nil {
			errs = append(errs, err)
			break
		}
		if len(ents) == 0 {
			break
		}
		progress := false
		for _, e := range ents {
			if err := removeAllAt(fd, e); err != nil {
				errs = append(errs, err)
			} else {
				progress = true
			}
		}
		if !progress {
			break
		}
	}
	unix.Close(fd)
	if err := unix.Unlinkat(dfd, name, unix.AT_REMOVEDIR); err != nil && !errors.Is(err, unix.ENOENT) {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return errs[0]
	}
	return nil
}

// ReadDirAll lists the names in the directory rel, links included: for
// the callers that remove what they list (a link is removed itself).
func (r *Root) ReadDirAll(rel string) ([]string, error) {
	var names []string
	err := r.eachEntry(rel, func(_ int, name string, _ uint8) error {
		names = append(names, name)
		return nil
	})
	return names, err
}

// Stat is one entry of ReadDirStat: a name and its lstat.
type Stat struct {
	Name string
	unix.Stat_t
}

// ReadDirStat lists the directory rel with an lstat of every entry,
// relative to the directory's descriptor, unsorted. A link is in the
// list (S_IFLNK: the caller refuses it as it refuses any non-file) and
// reported; an entry gone meanwhile is left out.
func (r *Root) ReadDirStat(rel string) ([]Stat, error) {
	var out []Stat
	err := r.eachEntry(rel, func(dfd int, name string, _ uint8) error {
		var e Stat
		if err := again(func() error { return unix.Fstatat(dfd, name, &e.Stat_t, unix.AT_SYMLINK_NOFOLLOW) }); err != nil {
			return nil // gone meanwhile
		}
		if e.Mode&unix.S_IFMT == unix.S_IFLNK {
			r.met(join(rel, name))
		}
		e.Name = name
		out = append(out, e)
		return nil
	})
	return out, err
}
