package memfs

import (
	"io/fs"
	"slices"
	"strconv"
	"time"

	"github.com/ucmfs/ucmfs/tiers/rootfs"
	"golang.org/x/sys/unix"
)

// Lstat describes rel: a file as its memfd's fstat says (st_nlink the
// count of its names), a directory as tmpfs would (st_nlink 2 plus its
// subdirectories).
func (f *FS) Lstat(rel string, st *unix.Stat_t) error {
	f.d.mu.RLock()
	defer f.d.mu.RUnlock()
	_, _, n, err := f.find(rel)
	if err == nil && n == nil {
		err = unix.ENOENT
	}
	if err == nil {
		err = f.d.stat(n, st)
	}
	return f.pathErr("stat", rel, err)
}

// Stat is Lstat: no link is ever in memory.
func (f *FS) Stat(rel string, st *unix.Stat_t) error { return f.Lstat(rel, st) }

// stat describes n (the disk's lock held).
func (d *Disk) stat(n *node, st *unix.Stat_t) error {
	if !n.isDir() {
		if err := unix.Fstat(n.fd(), st); err != nil {
			return err
		}
		set(&st.Nlink, n.links)
		return nil
	}
	*st = unix.Stat_t{Dev: d.dev, Ino: n.ino, Mode: unix.S_IFDIR | n.mode, Uid: n.uid, Gid: n.gid,
		Size: int64(20 * (len(n.kids) + 2)), // tmpfs's bogus dirent size
		Atim: n.atime, Mtim: n.mtime, Ctim: n.ctime}
	set(&st.Nlink, 2+n.subdirs)
	set(&st.Blksize, 4096)
	return nil
}

// set stores v in a field of Stat_t whose type differs by architecture.
func set[T ~uint32 | ~uint64 | ~int32 | ~int64](p *T, v int) { *p = T(v) }

// Statfs describes the disk: 4 KiB blocks, the capacity given to New,
// f_bavail and f_bfree what the files with a name leave of it.
func (f *FS) Statfs(st *unix.Statfs_t) error {
	f.d.mu.RLock()
	defer f.d.mu.RUnlock()
	if err := f.check("."); err != nil {
		return f.pathErr("statfs", ".", err)
	}
	var used int64
	for n := range f.d.files {
		var fst unix.Stat_t
		if err := unix.Fstat(n.fd(), &fst); err != nil {
			return f.pathErr("statfs", ".", err)
		}
		used += fst.Blocks * 512
	}
	const bs = 4096
	free := max(f.d.capacity-used, 0) / bs
	const inodes = 1 << 20
	*st = unix.Statfs_t{Type: unix.TMPFS_MAGIC, Bsize: bs, Frsize: bs, Namelen: 255,
		Blocks: uint64(f.d.capacity / bs), Bfree: uint64(free), Bavail: uint64(free),
		Files: inodes, Ffree: uint64(max(inodes-len(f.d.files), 0))}
	return nil
}

// Getxattr reads the extended attribute name of the file rel (its
// memfd's); a directory has none (ENODATA).
func (f *FS) Getxattr(rel, name string, buf []byte) (int, error) {
	f.d.mu.RLock()
	defer f.d.mu.RUnlock()
	_, _, n, err := f.find(rel)
	switch {
	case err == nil && n == nil:
		err = unix.ENOENT
	case err == nil && n.isDir():
		return -1, f.pathErr("getxattr", rel, unix.ENODATA) // -1 as from getxattr(2)
	}
	if err != nil {
		return 0, f.pathErr("getxattr", rel, err)
	}
	sz, err := unix.Fgetxattr(n.fd(), name, buf)
	return sz, f.pathErr("getxattr", rel, err)
}

// Chtimes sets rel's access and modification times.
func (f *FS) Chtimes(rel string, atime, mtime time.Time) error {
	ts := []unix.Timespec{timespec(atime), timespec(mtime)}
	f.d.mu.Lock()
	defer f.d.mu.Unlock()
	return f.at("utimes", rel, func(p *node, base string) error {
		n := p.kids[base]
		switch {
		case n == nil:
			return unix.ENOENT
		case n.isDir():
			n.atime, n.mtime, n.ctime = ts[0], ts[1], timespec(time.Now())
			return nil
		}
		return unix.UtimesNano("/proc/self/fd/"+strconv.Itoa(n.fd()), ts)
	})
}

// list calls fn for each entry of the directory rel, by name.
func (f *FS) list(rel string, fn func(name string, n *node) error) error {
	f.d.mu.RLock()
	defer f.d.mu.RUnlock()
	dir, err := f.dir(rel)
	if err != nil {
		return f.pathErr("open", rel, err)
	}
	names := make([]string, 0, len(dir.kids))
	for name := range dir.kids {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if err := fn(name, dir.kids[name]); err != nil {
			return f.pathErr("readdir", rel, err)
		}
	}
	return nil
}

// ReadDir lists the directory rel, sorted by name.
func (f *FS) ReadDir(rel string) ([]rootfs.Entry, error) {
	var ents []rootfs.Entry
	err := f.list(rel, func(name string, n *node) error {
		var typ fs.FileMode
		if n.isDir() {
			typ = fs.ModeDir
		}
		ents = append(ents, rootfs.NewEntry(f, rel, name, typ))
		return nil
	})
	return ents, err
}

// ReadDirNames lists the names in the directory rel, sorted.
func (f *FS) ReadDirNames(rel string) ([]string, error) {
	var names []string
	err := f.list(rel, func(name string, _ *node) error {
		names = append(names, name)
		return nil
	})
	return names, err
}

// ReadDirAll is ReadDirNames: no link is ever in memory.
func (f *FS) ReadDirAll(rel string) ([]string, error) { return f.ReadDirNames(rel) }

// ReadDirStat lists the directory rel with a Stat of every entry.
func (f *FS) ReadDirStat(rel string) ([]rootfs.Stat, error) {
	var out []rootfs.Stat
	err := f.list(rel, func(name string, n *node) error {
		e := rootfs.Stat{Name: name}
		if err := f.d.stat(n, &e.Stat_t); err != nil {
			return err
		}
		out = append(out, e)
		return nil
	})
	return out, err
}
