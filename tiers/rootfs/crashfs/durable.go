package crashfs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strconv"

	"github.com/ucmfs/ucmfs/tiers/rootfs"
	"golang.org/x/sys/unix"
)

// statx describes the file fd (name "", AT_EMPTY_PATH) or name in the
// directory fd.
func statx(fd int, name string) (ident, unix.Statx_t, error) {
	var st unix.Statx_t
	flags := unix.AT_SYMLINK_NOFOLLOW
	if name == "" {
		flags |= unix.AT_EMPTY_PATH
	}
	if err := unix.Statx(fd, name, flags, unix.STATX_BASIC_STATS|unix.STATX_BTIME, &st); err != nil {
		return ident{}, st, err
	}
	return ident{ino: st.Ino, sec: st.Btime.Sec, nsec: int64(st.Btime.Nsec)}, st, nil
}

// syncFile records the file open as f durable as it is now.
func (d *Disk) syncFile(f *os.File) error {
	id, img, err := d.capture(int(f.Fd()))
	if err != nil {
		return err
	}
	d.mu.Lock()
	d.keep(id, img)
	d.mu.Unlock()
	return nil
}

// keep makes img id's durable image (d.mu held). Its xattrs supersede
// those a directory's sync recorded for id before (d.attrs): the later
// record of a file's xattrs is the durable one.
func (d *Disk) keep(id ident, img image) {
	if old, ok := d.files[id]; ok {
		os.Remove(old.bytes)
	}
	d.files[id] = img
	delete(d.attrs, id)
}

// capture copies the file fd's bytes into the shadow directory, with its
// mode, times and xattrs. The file is opened again for reading (fd may
// be write-only or O_DIRECT).
func (d *Disk) capture(fd int) (ident, image, error) {
	id, st, err := statx(fd, "")
	if err != nil {
		return id, image{}, err
	}
	src, err := os.Open("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil {
		return id, image{}, err
	}
	defer src.Close()
	d.mu.Lock()
	d.seq++
	dst := filepath.Join(d.shadow, strconv.Itoa(d.seq))
	d.mu.Unlock()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return id, image{}, err
	}
	_, err = io.Copy(out, src)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(dst)
		return id, image{}, err
	}
	img := image{bytes: dst, mode: uint32(st.Mode) & 0o7777, mtime: unix.Timespec{Sec: st.Mtime.Sec, Nsec: int64(st.Mtime.Nsec)}}
	img.xattrs, err = xattrs(int(src.Fd()))
	return id, img, err
}

// xattrs reads every extended attribute of the file fd.
func xattrs(fd int) (map[string][]byte, error) {
	buf := make([]byte, 64<<10)
	n, err := unix.Flistxattr(fd, buf)
	if err != nil {
		if errors.Is(err, unix.ENOTSUP) {
			return nil, nil
		}
		return nil, err
	}
	out := map[string][]byte{}
	for _, name := range bytes.Split(buf[:n], []byte{0}) {
		if len(name) == 0 {
			continue
		}
		val := make([]byte, 64<<10)
		m, err := unix.Fgetxattr(fd, string(name), val)
		if err != nil {
			return nil, err
		}
		out[string(name)] = val[:m]
	}
	return out, nil
}

// syncDir records the entries of the directory rel beneath r durable,
// with the xattrs of each file. The listing holds off renames (d.names),
// as a directory's fsync is atomic with a rename on a real filesystem,
// and each file's identity and xattrs are read from one descriptor of
// it (listDir): the xattrs read by name after the listing were those of
// whatever file a rename had put there since, recorded as the listed
// file's.
func (d *Disk) syncDir(r *rootfs.Root, rel string) error {
	fd, err := r.OpenFD(rel, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	attrs := map[ident]map[string][]byte{}
	d.names.Lock()
	id, ents, err := listDir(fd, attrs)
	d.names.Unlock()
	if err != nil {
		return err
	}
	if d.listed != nil {
		d.listed()
	}
	d.mu.Lock()
	d.dirs[id] = ents
	maps.Copy(d.attrs, attrs)
	d.mu.Unlock()
	return nil
}

// listDir lists the directory fd with the identity of each file and
// directory in it (anything else is no tier's and left out); attrs, when
// not nil, gets the xattrs of each file.
func listDir(fd int, attrs map[ident]map[string][]byte) (ident, map[string]entry, error) {
	id, _, err := statx(fd, "")
	if err != nil {
		return id, nil, err
	}
	names, err := rootfs.FromFD(fd, ".").ReadDirAll(".")
	if err != nil {
		return id, nil, err
	}
	ents := make(map[string]entry, len(names))
	for _, name := range names {
		eid, st, err := statx(fd, name)
		if errors.Is(err, unix.ENOENT) {
			continue
		}
		if err != nil {
			return id, nil, err
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			ents[name] = entry{id: eid, dir: true}
		case unix.S_IFREG:
			if attrs == nil {
				ents[name] = entry{id: eid}
				break
			}
			fid, x, err := fileAttrs(fd, name)
			if errors.Is(err, unix.ENOENT) {
				continue // gone since the listing
			}
			if err != nil {
				fid = eid // durable all the same, its xattrs unread
			}
			ents[name] = entry{id: fid}
			if x != nil {
				attrs[fid] = x
			}
		}
	}
	return id, ents, nil
}

// fileAttrs reads the identity and xattrs of the file name in the
// directory fd from one descriptor of it, so that they are one file's
// (x is nil when they cannot be read). ENOENT: the name is no longer a
// regular file's.
func fileAttrs(dir int, name string) (id ident, x map[string][]byte, err error) {
	f, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return id, nil, err
	}
	defer unix.Close(f)
	id, st, err := statx(f, "")
	if err != nil {
		return id, nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return id, nil, unix.ENOENT
	}
	if x, err = xattrs(f); err != nil {
		return id, nil, nil
	}
	if x == nil {
		x = map[string][]byte{}
	}
	return id, x, nil
}

// syncAll records everything beneath the directory durable, as it is.
func (d *Disk) syncAll() error {
	d.names.Lock()
	defer d.names.Unlock()
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, img := range d.files {
		os.Remove(img.bytes)
	}
	d.files, d.dirs, d.attrs = map[ident]image{}, map[ident]map[string]entry{}, map[ident]map[string][]byte{}
	fd, err := unix.Open(d.dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	id, err := d.walk(fd)
	d.root = id
	return err
}

// walk records the directory fd and everything beneath it (d.mu held).
func (d *Disk) walk(fd int) (ident, error) {
	id, ents, err := listDir(fd, nil)
	if err != nil {
		return id, err
	}
	d.dirs[id] = ents
	for name, e := range ents {
		flags := unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_CLOEXEC
		if e.dir {
			flags |= unix.O_DIRECTORY
		}
		sub, err := unix.Openat(fd, name, flags, 0)
		if errors.Is(err, unix.ENOENT) {
			continue
		}
		if err != nil {
			return id, err
		}
		if e.dir {
			_, err = d.walk(sub)
		} else if _, ok := d.files[e.id]; !ok {
			d.mu.Unlock() // capture takes it for the shadow name
			var img image
			_, img, err = d.capture(sub)
			d.mu.Lock()
			d.files[e.id] = img
		}
		unix.Close(sub)
		if err != nil {
			return id, fmt.Errorf("crashfs: %s: %w", name, err)
		}
	}
	return id, nil
}
