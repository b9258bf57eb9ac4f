package memfs

import (
	"os"

	"github.com/ucmfs/ucmfs/tiers/rootfs"
	"golang.org/x/sys/unix"
)

// OpenFile opens rel with flag and, when it creates, perm (the umask
// applied): a new open file of rel's memfd (package doc).
func (f *FS) OpenFile(rel string, flag int, perm uint32) (*os.File, error) {
	fd, err := f.OpenFD(rel, flag, perm)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), f.Path(rel)), nil
}

// OpenFD is OpenFile returning the bare descriptor.
func (f *FS) OpenFD(rel string, flag int, perm uint32) (int, error) {
	if flag&unix.O_CREAT != 0 {
		f.d.mu.Lock()
		defer f.d.mu.Unlock()
	} else {
		f.d.mu.RLock()
		defer f.d.mu.RUnlock()
	}
	fd, err := f.open(rel, flag, perm)
	if err != nil {
		return -1, f.pathErr("open", rel, err)
	}
	return fd, nil
}

// open is OpenFD under the disk's lock (held for writing when flag
// creates), its errors bare.
func (f *FS) open(rel string, flag int, perm uint32) (int, error) {
	p, base, n, err := f.find(rel)
	switch {
	case err != nil:
		return -1, err
	case n == nil && flag&unix.O_CREAT == 0:
		return -1, unix.ENOENT
	case n == nil:
		return f.create(p, base, flag, perm)
	case flag&(unix.O_CREAT|unix.O_EXCL) == unix.O_CREAT|unix.O_EXCL:
		return -1, unix.EEXIST
	case n.isDir() && flag&unix.O_TMPFILE == unix.O_TMPFILE:
		return -1, unix.EOPNOTSUPP // as a filesystem without O_TMPFILE
	case n.isDir():
		// The kernel says EISDIR of a write, a create or a truncation of a
		// directory, and opens it otherwise; memory has no descriptor of
		// a directory to give.
		return -1, unix.EISDIR
	case flag&unix.O_DIRECTORY != 0:
		return -1, unix.ENOTDIR
	}
	return reopen(n, flag)
}

// create makes the file base in the directory p, with perm, and opens it
// with flag (before its mode is set, as open(2) with O_CREAT gives the
// creator a descriptor whatever the mode).
func (f *FS) create(p *node, base string, flag int, perm uint32) (int, error) {
	if flag&unix.O_DIRECTORY != 0 || perm&^0o7777 != 0 {
		return -1, unix.EINVAL // as openat2 says
	}
	name := base
	if len(name) > 200 {
		name = name[:200] // memfd_create takes 249 bytes, a directory 255
	}
	mfd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC)
	if err != nil {
		return -1, err
	}
	n := &node{f: os.NewFile(uintptr(mfd), "memfd:"+name)}
	fd, err := reopen(n, flag)
	if err == nil {
		if err = unix.Fchmod(mfd, perm&^f.d.umask); err != nil {
			unix.Close(fd)
		}
	}
	if err != nil {
		n.f.Close()
		return -1, err
	}
	f.d.attach(p, base, n)
	return fd, nil
}

// OpenRegular opens the regular file rel read-only; a directory is
// rootfs.ErrNotRegular.
func (f *FS) OpenRegular(rel string) (*os.File, error) {
	f.d.mu.RLock()
	defer f.d.mu.RUnlock()
	_, _, n, err := f.find(rel)
	switch {
	case err != nil:
	case n == nil:
		err = unix.ENOENT
	case n.isDir():
		err = rootfs.ErrNotRegular
	}
	if err != nil {
		return nil, f.pathErr("open", rel, err)
	}
	fd, err := reopen(n, unix.O_RDONLY)
	if err != nil {
		return nil, f.pathErr("open", rel, err)
	}
	return os.NewFile(uintptr(fd), f.Path(rel)), nil
}

// CreateTemp creates a new file in the directory dir, named prefix and a
// random suffix (rootfs.CreateTemp).
func (f *FS) CreateTemp(dir, prefix string, perm uint32) (*os.File, string, error) {
	return rootfs.CreateTemp(f, dir, prefix, perm)
}

// ReadFile reads the regular file rel whole (rootfs.ReadFile).
func (f *FS) ReadFile(rel string) ([]byte, error) { return rootfs.ReadFile(f, rel) }

// WriteFile writes data to the file rel, created with perm or truncated
// (rootfs.WriteFile).
func (f *FS) WriteFile(rel string, data []byte, perm uint32) error {
	return rootfs.WriteFile(f, rel, data, perm)
}

// SyncFile fsyncs file, which tmpfs answers at once (an error only for a
// closed file).
func (f *FS) SyncFile(file *os.File) error { return file.Sync() }

// SyncDir checks that rel is a directory: its names are as durable as
// they will ever be.
func (f *FS) SyncDir(rel string) error {
	f.d.mu.RLock()
	defer f.d.mu.RUnlock()
	_, err := f.dir(rel)
	return f.pathErr("open directory", rel, err)
}

// Syncfs has nothing to do.
func (f *FS) Syncfs() error {
	return f.pathErr("open", ".", f.check("."))
}

// dir is the directory rel (the disk's lock held): ENOENT, ENOTDIR.
func (f *FS) dir(rel string) (*node, error) {
	if err := f.check(rel); err != nil {
		return nil, err
	}
	return f.d.walk(rel)
}
