package crashfs

import (
	"errors"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Restore brings the power back: the directory is rewound to its durable
// state (the filesystems opened before the cut must be closed first: a
// file they still have open is another, forgotten one), which is then
// all durable, and operations work again.
func (d *Disk) Restore() error {
	d.ops.Lock()
	defer d.ops.Unlock()
	d.cut.Store(true)
	d.mu.Lock()
	// What the directory holds now is moved aside, not removed: a torn
	// file is made from its latest bytes, with its latest xattrs.
	latest := filepath.Join(d.shadow, "latest")
	err := os.RemoveAll(latest)
	if err == nil {
		err = os.Mkdir(latest, 0o700)
	}
	var ents []os.DirEntry
	if err == nil {
		ents, err = os.ReadDir(d.dir)
	}
	for _, e := range ents {
		if err == nil {
			err = os.Rename(filepath.Join(d.dir, e.Name()), filepath.Join(latest, e.Name()))
		}
	}
	now := map[ident]string{}
	current(latest, now)
	if err == nil {
		err = d.make(d.root, d.dir, map[ident]string{}, now)
	}
	d.mu.Unlock()
	if err == nil {
		err = os.RemoveAll(latest)
	}
	if err != nil {
		return err
	}
	if err := d.syncAll(); err != nil {
		return err
	}
	d.cut.Store(false)
	return nil
}

// current maps the identity of every file beneath dir to its path.
func current(dir string, into map[ident]string) {
	_ = filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err == nil && e.Type().IsRegular() {
			if id, _, err := statx(unix.AT_FDCWD, p); err == nil {
				into[id] = p
			}
		}
		return nil
	})
}

// make makes again in the directory at p the durable entries of the
// directory id (d.mu held); made maps the files made so far to their
// paths (a second durable name of one is a link).
func (d *Disk) make(id ident, p string, made map[ident]string, now map[ident]string) error {
	for name, e := range d.dirs[id] {
		sub := filepath.Join(p, name)
		if e.dir {
			if err := os.Mkdir(sub, 0o700); err != nil {
				return err
			}
			if err := d.make(e.id, sub, made, now); err != nil {
				return err
			}
			continue
		}
		if first, ok := made[e.id]; ok {
			if err := os.Link(first, sub); err != nil {
				return err
			}
			continue
		}
		made[e.id] = sub
		if err := d.makeFile(sub, e.id, now[e.id]); err != nil {
			return err
		}
	}
	return nil
}

// makeFile makes the file id at p from its durable image (empty if it
// has none), torn with the bytes at latest when Torn is set. Its xattrs
// are those of the file at latest when there is one, else those it had
// at the later of the last sync of a directory naming it and the last
// sync of the file: an xattr is metadata, which a journaling filesystem
// commits with the names (ext4's delayed allocation loses the bytes, not
// the inode).
func (d *Disk) makeFile(p string, id ident, latest string) error {
	img, synced := d.files[id]
	var b []byte
	if synced {
		var err error
		if b, err = os.ReadFile(img.bytes); err != nil {
			return err
		}
	}
	attrs := img.xattrs
	if x, ok := d.attrs[id]; ok {
		attrs = x
	}
	if latest != "" {
		cur, err := os.ReadFile(latest)
		if err == nil && d.Torn && string(cur) != string(b) {
			b = torn(cur, b, d.TornLen)
		}
		if f, err := os.Open(latest); err == nil {
			if x, err := xattrs(int(f.Fd())); err == nil {
				attrs = x
			}
			f.Close()
		}
	}
	if err := os.WriteFile(p, b, 0o600); err != nil {
		return err
	}
	for name, val := range attrs {
		if err := unix.Lsetxattr(p, name, val, 0); err != nil && !errors.Is(err, unix.ENOTSUP) {
			return err
		}
	}
	if !synced {
		return nil
	}
	if err := unix.UtimesNano(p, []unix.Timespec{img.mtime, img.mtime}); err != nil {
		return err
	}
	return os.Chmod(p, os.FileMode(img.mode&0o777))
}

// torn is the latest bytes cur cut at a length of n's choosing (all of
// them when n is nil), over the durable bytes b.
func torn(cur, b []byte, n func(int) int) []byte {
	cut := len(cur)
	if n != nil {
		cut = n(len(cur))
	}
	out := append([]byte(nil), cur[:cut]...)
	if len(b) > cut {
		out = append(out, b[cut:]...)
	}
	return out
}
