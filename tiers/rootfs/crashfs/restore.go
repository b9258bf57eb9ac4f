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
	var now map[ident]string
	if d.Torn {
		now = map[ident]string{}
		current(d.dir, now)
	}
	ents, err := os.ReadDir(d.dir)
	if err != nil {
		d.mu.Unlock()
		return err
	}
	for _, e := range ents {
		if err := os.RemoveAll(filepath.Join(d.dir, e.Name())); err != nil {
			d.mu.Unlock()
			return err
		}
	}
	err = d.make(d.root, d.dir, map[ident]string{}, now)
	d.mu.Unlock()
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
// has none), torn with the bytes at latest when that is set.
func (d *Disk) makeFile(p string, id ident, latest string) error {
	img, synced := d.files[id]
	var b []byte
	if synced {
		var err error
		if b, err = os.ReadFile(img.bytes); err != nil {
			return err
		}
	}
	if latest != "" {
		if cur, err := os.ReadFile(latest); err == nil && string(cur) != string(b) {
			n := len(cur)
			if d.TornLen != nil {
				n = d.TornLen(len(cur))
			}
			torn := append([]byte(nil), cur[:n]...)
			if len(b) > n {
				torn = append(torn, b[n:]...)
			}
			b = torn
		}
	}
	if err := os.WriteFile(p, b, 0o600); err != nil {
		return err
	}
	if !synced {
		return nil
	}
	for name, val := range img.xattrs {
		if err := unix.Lsetxattr(p, name, val, 0); err != nil && !errors.Is(err, unix.ENOTSUP) {
			return err
		}
	}
	if err := unix.UtimesNano(p, []unix.Timespec{img.mtime, img.mtime}); err != nil {
		return err
	}
	return os.Chmod(p, os.FileMode(img.mode&0o777))
}
