package memfs

import (
	"errors"
	"strings"

	"golang.org/x/sys/unix"
)

// Mkdir makes the directory rel with perm (the umask applied).
func (f *FS) Mkdir(rel string, perm uint32) error {
	f.d.mu.Lock()
	defer f.d.mu.Unlock()
	return f.at("mkdir", rel, func(p *node, base string) error {
		if p.kids[base] != nil {
			return unix.EEXIST
		}
		f.d.attach(p, base, f.d.newDir(perm))
		return nil
	})
}

// MkdirAll makes rel and its missing parents with perm; a component that
// is a file is ENOTDIR, at that component's path (as Root.MkdirAll).
func (f *FS) MkdirAll(rel string, perm uint32) error {
	f.d.mu.Lock()
	defer f.d.mu.Unlock()
	if err := f.check(rel); err != nil || rel == "." {
		return f.pathErr("mkdir", rel, err)
	}
	n := f.d.root
	for i := 0; ; {
		end := len(rel)
		if j := strings.IndexByte(rel[i:], '/'); j >= 0 {
			end = i + j
		}
		next := n.kids[rel[i:end]]
		switch {
		case next == nil:
			next = f.d.newDir(perm)
			f.d.attach(n, rel[i:end], next)
		case !next.isDir():
			return f.pathErr("mkdir", rel[:end], unix.ENOTDIR)
		}
		if end == len(rel) {
			return nil
		}
		n, i = next, end+1
	}
}

// Unlink removes the file rel (its open descriptors stay valid).
func (f *FS) Unlink(rel string) error {
	f.d.mu.Lock()
	defer f.d.mu.Unlock()
	return f.at("unlink", rel, func(p *node, base string) error {
		switch n := p.kids[base]; {
		case n == nil:
			return unix.ENOENT
		case n.isDir():
			return unix.EISDIR
		}
		f.d.drop(f.d.detach(p, base))
		return nil
	})
}

// Rmdir removes the empty directory rel.
func (f *FS) Rmdir(rel string) error {
	f.d.mu.Lock()
	defer f.d.mu.Unlock()
	return f.at("rmdir", rel, func(p *node, base string) error {
		switch n := p.kids[base]; {
		case n == nil:
			return unix.ENOENT
		case !n.isDir():
			return unix.ENOTDIR
		case len(n.kids) > 0:
			return unix.ENOTEMPTY
		}
		f.d.detach(p, base)
		return nil
	})
}

// RemoveAll removes rel and everything beneath it; a missing rel is no
// error.
func (f *FS) RemoveAll(rel string) error {
	f.d.mu.Lock()
	defer f.d.mu.Unlock()
	err := f.at("remove", rel, func(p *node, base string) error {
		if p.kids[base] == nil {
			return nil
		}
		f.d.drop(f.d.detach(p, base))
		return nil
	})
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	return err
}

// Rename moves oldRel to newRel with renameat2's flags: 0 (replace),
// unix.RENAME_NOREPLACE (EEXIST when newRel is there) or
// unix.RENAME_EXCHANGE (the two swapped); any other EINVAL.
func (f *FS) Rename(oldRel, newRel string, flags uint) error {
	f.d.mu.Lock()
	defer f.d.mu.Unlock()
	return f.at("rename", oldRel, func(op *node, ob string) error {
		return f.at("rename", newRel, func(np *node, nb string) error {
			return f.d.rename(op, ob, np, nb, flags)
		})
	})
}

// RenameOnce is Rename: nothing in memory is interrupted.
func (f *FS) RenameOnce(oldRel, newRel string, flags uint) error {
	return f.Rename(oldRel, newRel, flags)
}

// rename is renameat2(2) of the entry ob of op to nb of np, its checks in
// the kernel's order.
func (d *Disk) rename(op *node, ob string, np *node, nb string, flags uint) error {
	exchange := flags&unix.RENAME_EXCHANGE != 0
	if flags&^(unix.RENAME_NOREPLACE|unix.RENAME_EXCHANGE) != 0 || exchange && flags&unix.RENAME_NOREPLACE != 0 {
		return unix.EINVAL
	}
	src, dst := op.kids[ob], np.kids[nb]
	switch {
	case src == nil:
		return unix.ENOENT
	case dst != nil && flags&unix.RENAME_NOREPLACE != 0:
		return unix.EEXIST
	case dst == nil && exchange:
		return unix.ENOENT
	case src.isDir() && (np == src || beneath(np, src)):
		return unix.EINVAL // a directory into itself
	case dst != nil && dst.isDir() && (op == dst || beneath(op, dst)):
		if exchange {
			return unix.EINVAL
		}
		return unix.ENOTEMPTY // onto a directory holding the source
	case src == dst:
		return nil // two names of one file, or one name: nothing to do
	case exchange:
		d.detach(op, ob)
		d.detach(np, nb)
		d.attach(op, ob, dst)
		d.attach(np, nb, src)
		return nil
	case dst != nil && src.isDir() && !dst.isDir():
		return unix.ENOTDIR
	case dst != nil && !src.isDir() && dst.isDir():
		return unix.EISDIR
	case dst != nil && len(dst.kids) > 0:
		return unix.ENOTEMPTY
	}
	d.detach(op, ob)
	if dst != nil {
		d.drop(d.detach(np, nb))
	}
	d.attach(np, nb, src)
	return nil
}

// Link makes newRel a second name of the file oldRel (a directory is
// EPERM).
func (f *FS) Link(oldRel, newRel string) error {
	f.d.mu.Lock()
	defer f.d.mu.Unlock()
	return f.at("link", oldRel, func(op *node, ob string) error {
		return f.at("link", newRel, func(np *node, nb string) error {
			src := op.kids[ob]
			switch {
			case src == nil:
				return unix.ENOENT
			case np.kids[nb] != nil:
				return unix.EEXIST
			case src.isDir():
				return unix.EPERM
			}
			f.d.attach(np, nb, src)
			return nil
		})
	})
}

// LinkOnce is Link: nothing in memory is interrupted.
func (f *FS) LinkOnce(oldRel, newRel string) error { return f.Link(oldRel, newRel) }
