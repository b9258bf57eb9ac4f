package dir

import (
	"errors"
	"fmt"
	"os"
	"path"
	"time"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/tiers/rootfs"
	"github.com/ucmfs/ucmfs/tiers/tier"
	"golang.org/x/sys/unix"
)

// linkMet reports a link (or a way out of the root) an operation met in
// the tier and refused: one log line a minute, and the count in the
// tier's statistics (Links). A link is never followed or listed.
func (t *Tier) linkMet(rel string) {
	if t.linkLog.Allow(time.Now()) {
		t.log.Warn("tier path refused: a symbolic link in the tier directory is never followed", "tier", t.kind, "dir", t.root, "path", rel, "refused", t.fs.Links())
	}
}

// Links is how many symbolic links (or ways out of the root) the tier's
// operations met and refused.
func (t *Tier) Links() int64 { return t.fs.Links() }

// Sync makes an already published file and its directory entry durable
// (fsync of both), for a file committed without Sync.
func (t *Tier) Sync(key format.Key) error {
	if err := tier.CheckKey(key); err != nil {
		return fmt.Errorf("%s tier: %s: %w", t.kind, key, tier.ErrNotFound)
	}
	p := key.Path()
	err := t.do("sync", func() error {
		f, err := t.fs.OpenRegular(p)
		if err != nil {
			return tier.NotFound("open", err)
		}
		defer f.Close()
		if err := t.fs.SyncFile(f); err != nil {
			return tier.OSErr("fsync", err)
		}
		return tier.SyncDir(t.fs, path.Dir(p))
	}, nil)
	if err != nil {
		return fmt.Errorf("%s tier: sync %s: %w", t.kind, key, err)
	}
	return nil
}

// Stat describes a published file from the index, without touching the
// directory: the CRC of a file found by a rebuild is not read here (HasCRC
// stays unset until CRC has read it). In a shared directory the index of
// the key's shard is revalidated first, and a key missing from it is
// looked up on disk and, if present, adopted (shared.go).
func (t *Tier) Stat(key format.Key) (tier.Info, error) {
	if t.closed.Load() {
		return tier.Info{}, t.errClosed("stat")
	}
	return t.share.stat(key)
}

// CRC returns the payload CRC-32C the tier keeps for key: from the index,
// or the first time it is asked for a file found by a rebuild or adopted,
// from the file's xattr (then remembered). has is false when the file has
// none; ErrNotFound when the tier does not hold key.
func (t *Tier) CRC(key format.Key) (crc uint32, has bool, err error) {
	info, crcRead, ok := tier.IndexGet(t.idx, key)
	if !ok {
		if info, err = t.Stat(key); err != nil {
			return 0, false, err
		}
		info, crcRead, ok = tier.IndexGet(t.idx, key)
		if !ok {
			return info.CRC, info.HasCRC, nil
		}
	}
	if crcRead {
		return info.CRC, info.HasCRC, nil
	}
	crc, has, err = t.readCRC(key)
	switch {
	case errors.Is(err, tier.ErrNotFound):
		t.idx.Remove(key) // removed behind our back
		return 0, false, err
	case err != nil:
		return 0, false, nil // the CRC stays unknown; the file is still there
	}
	t.idx.SetCRC(key, crc, has)
	return crc, has, nil
}

// CRCFrom is CRC for f, key's file open on the tier (a copy's source):
// the xattr is read from f's descriptor, not by the file's path, so a
// copy from a shared filesystem makes one open and one stat fewer (each
// a round trip to its servers: about 2 ms a file of the copy's 8 on
// GlusterFS), and the CRC is the very file's the copy reads. It is kept
// in the index only while key's entry is still the one found first: f
// may be a version another replaced meanwhile.
func (t *Tier) CRCFrom(key format.Key, f *os.File) (crc uint32, has bool, err error) {
	e := t.idx.EntryOf(key)
	info, crcRead, ok := tier.IndexGet(t.idx, key)
	if !ok || e == nil {
		return t.CRC(key)
	}
	if crcRead {
		return info.CRC, info.HasCRC, nil
	}
	crc, has, err = t.fileXattrCRC(f)
	if err == nil && !has && t.usesSums() {
		crc, has, err = t.readSum(key)
	}
	if err != nil {
		return 0, false, err
	}
	t.idx.SetCRCFor(key, e, crc, has)
	return crc, has, nil
}

func (t *Tier) notFound(key format.Key) error {
	return fmt.Errorf("%s tier: %s: %w", t.kind, key, tier.ErrNotFound)
}

// readCRC reads the CRC xattr of key's file, or on a tier that keeps no
// xattrs its sum file (sums.go): has is false when it has neither.
func (t *Tier) readCRC(key format.Key) (crc uint32, has bool, err error) {
	crc, has, err = t.readXattrCRC(key, crcXattr)
	if err != nil || has || !t.usesSums() {
		return crc, has, err
	}
	return t.readSum(key)
}

// HeaderCRC reads the CRC-32C of the 64 header bytes the tier keeps for
// key's file (format.HeaderCRCXattr): has is false when the file has none
// (written before it was kept, or no xattrs). It is read from the file
// each time: only a first serve or a copy asks for it.
func (t *Tier) HeaderCRC(key format.Key) (crc uint32, has bool, err error) {
	return t.readXattrCRC(key, format.HeaderCRCXattr)
}

// KeepCRC writes crc, computed by a read of key's file f that found no
// CRC kept for it (a file staged on disk, published before its bytes
// passed through the daemon), into the file's CRC xattr, so that a later
// run checks the file against it instead of computing it again. Best
// effort: a daemon not root may not write the xattr of a 0444 file, and
// a filesystem without xattrs keeps none (the index has the CRC for this
// run either way).
func (t *Tier) KeepCRC(key format.Key, f *os.File, crc uint32) {
	if t.noXattr.Load() || !t.share.inPlace() {
		return
	}
	_ = t.do("setxattr", func() error {
		return tier.IgnoringEINTR(func() error { return unix.Fsetxattr(int(f.Fd()), crcXattr, formatCRC(crc), 0) })
	}, nil)
}

// readXattrCRC reads a CRC kept in the xattr name of key's file.
func (t *Tier) readXattrCRC(key format.Key, name string) (crc uint32, has bool, err error) {
	p := key.Path()
	err = t.do("getxattr", func() error {
		var buf [16]byte
		n, err := t.fs.Getxattr(p, name, buf[:])
		return t.xattrCRC(buf[:max(n, 0)], err, &crc, &has)
	}, nil)
	return crc, has, err
}

// fileXattrCRC reads the CRC xattr of the open file f.
func (t *Tier) fileXattrCRC(f *os.File) (crc uint32, has bool, err error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, false, err
	}
	err = t.do("getxattr", func() error {
		var buf [16]byte
		var n int
		var xerr error
		if cerr := rc.Control(func(fd uintptr) {
			xerr = tier.IgnoringEINTR(func() (err error) { n, err = unix.Fgetxattr(int(fd), crcXattr, buf[:]); return err })
		}); cerr != nil {
			return cerr
		}
		return t.xattrCRC(buf[:max(n, 0)], xerr, &crc, &has)
	}, nil)
	return crc, has, err
}

// xattrCRC takes the result of a read of a CRC xattr (b, err) into crc
// and has: no xattr, or none on the filesystem, is no CRC.
func (t *Tier) xattrCRC(b []byte, err error, crc *uint32, has *bool) error {
	switch {
	case err == nil:
		*crc, *has = parseCRC(b)
		return nil
	case errors.Is(err, unix.ENOTSUP) || errors.Is(err, unix.EOPNOTSUPP):
		t.noXattr.Store(true) // no xattrs here: CRCs are in sum files
		return nil
	case errors.Is(err, unix.ENODATA) || errors.Is(err, unix.ERANGE):
		return nil
	}
	return tier.NotFound("getxattr", err)
}

// lookup finds a file another daemon published in a shared directory and
// adopts it into the index.
func (t *Tier) lookup(key format.Key) (tier.Info, error) {
	p := key.Path()
	var st unix.Stat_t
	err := t.do("stat", func() error { return t.fs.Stat(p, &st) }, nil)
	if err != nil {
		if GoneErr(err) {
			return tier.Info{}, t.notFound(key)
		}
		return tier.Info{}, fmt.Errorf("%s tier: %w", t.kind, tier.NotFound("stat", err))
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return tier.Info{}, t.notFound(key)
	}
	info := tier.Info{Key: key, Size: st.Size, MTime: statMTime(&st)}
	if sd := t.sharedDir(); sd != nil && sd.removed.hides(key, info.MTime) {
		return tier.Info{}, t.notFound(key) // a version this host removed, back (shared_copies.go)
	}
	if !t.adoptFound(tier.NewEntry(info)) && t.superseded(key) {
		return tier.Info{}, t.notFound(key)
	}
	return info, nil // its CRC is read when asked (CRC)
}

// Open opens a published file read-only and marks it used. A file gone
// from disk is dropped from the index (ErrNotFound).
func (t *Tier) Open(key format.Key) (*os.File, error) {
	if tier.CheckKey(key) != nil {
		return nil, t.notFound(key)
	}
	known := t.idx.Touch(key)
	if !known && (!t.share.opensUnindexed() || t.superseded(key)) {
		if t.closed.Load() {
			return nil, t.errClosed("open")
		}
		return nil, t.notFound(key)
	}
	var f *os.File
	err := t.do("open", func() error {
		var err error
		f, err = t.openBeneath(key.Path())
		return err
	}, func() {
		if f != nil {
			f.Close()
		}
	})
	if err != nil {
		refused := errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) || errors.Is(err, rootfs.ErrNotRegular)
		if errors.Is(err, rootfs.ErrNotRegular) && t.refusedLog.Allow(time.Now()) {
			t.log.Warn("tier path refused: not a regular file where a published file should be", "tier", t.kind, "err", err)
		}
		if known && (GoneErr(err) || refused) {
			t.idx.Remove(key)
		}
		if GoneErr(err) || refused {
			return nil, t.notFound(key)
		}
		return nil, fmt.Errorf("%s tier: %w", t.kind, tier.NotFound("open", err))
	}
	if !known {
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			if sd := t.sharedDir(); sd != nil && sd.removed.hides(key, fi.ModTime()) {
				f.Close()
				return nil, t.notFound(key) // a version this host removed, back (shared_copies.go)
			}
			t.adoptFound(tier.NewEntry(tier.Info{Key: key, Size: fi.Size(), MTime: fi.ModTime()}))
		}
	}
	return f, nil
}

// Remove deletes a published file. The file is unlinked even if the index
// does not know it (a file another daemon published, or one added by
// hand), so a removed key does not come back at the next start.
func (t *Tier) Remove(key format.Key) error { return t.remove(key, false) }

// Delete is Remove for a user's removal: through the trash
// (trash.go), so that it answers without waiting for the unlink.
func (t *Tier) Delete(key format.Key) error { return t.remove(key, true) }

// remove is Remove; trash: through the trash when it has room
// (trash.go), else unlinked in place.
func (t *Tier) remove(key format.Key, trash bool) error {
	if tier.CheckKey(key) != nil {
		return t.notFound(key)
	}
	began := time.Now()
	e, known := t.idx.Remove(key)
	p, size := key.Path(), t.supersededSize(key)
	if known {
		size = e.Size
	}
	err := t.do("remove", func() error {
		var err error
		if trash {
			err = t.unlink(p, size)
		} else {
			err = t.fs.Unlink(p)
		}
		if err == nil || tier.IsENOENT(err) {
			t.removeSum(key)
			t.settle(key)
		}
		return err
	}, nil)
	if trash && (err == nil || tier.IsENOENT(err)) {
		t.share.removeCopies(key, began)
	}
	switch {
	case err == nil:
		return nil
	case tier.IsENOENT(err) && known:
		return nil // removed by someone else: it is gone either way
	case known && !tier.IsENOENT(err):
		// Still on disk (or unknown): keep it indexed. The index went
		// first so a racing commit of the key cannot be forgotten.
		t.idx.Adopt(e)
	}
	return fmt.Errorf("%s tier: %w", t.kind, tier.NotFound("remove", err))
}

// Quarantine takes key's file out of the tier for good: it is moved to
// <dir>/.quarantine/<model>/<hh>/<name> (where ucmfs fsck --repair puts
// what it finds bad, and where the rebuild does not look), for a person to
// look at; the index forgets it. When the move fails the file is removed.
func (t *Tier) Quarantine(key format.Key) error {
	if tier.CheckKey(key) != nil {
		return t.notFound(key)
	}
	t.idx.Remove(key)
	rel := key.Path()
	err := t.do("quarantine", func() error {
		defer t.removeSum(key)
		_, err := moveAside(t.fs, rel)
		if err != nil && !tier.IsENOENT(err) {
			return errors.Join(err, t.fs.Unlink(rel))
		}
		return nil
	}, nil)
	if err != nil {
		return fmt.Errorf("%s tier: quarantine %s: %w", t.kind, key, err)
	}
	return nil
}

// RemoveModel removes every file and directory of model, one shard
// directory at a time (each under the operation timeout).
func (t *Tier) RemoveModel(model string) error {
	if err := format.ValidateModel(model); err != nil {
		return err
	}
	gone := t.idx.RemoveModel(model)
	t.forgetSuperseded(model)
	t.dirs.Forget(model)
	if t.usesSums() && len(gone) > 0 {
		_ = t.do("remove model", func() error {
			for _, e := range gone {
				t.removeSum(e.Key())
			}
			return nil
		}, nil)
	}
	var names []string
	err := t.do("remove model", func() (err error) {
		names, err = t.fs.ReadDirNames(model)
		return err
	}, nil)
	if tier.IsENOENT(err) {
		return nil
	}
	for _, name := range names {
		if err != nil {
			break
		}
		sub := model + "/" + name
		err = t.do("remove model", func() error { return t.fs.RemoveAll(sub) }, nil)
	}
	if err == nil {
		err = t.do("remove model", func() error { return t.fs.RemoveAll(model) }, nil)
	}
	if err != nil {
		return fmt.Errorf("%s tier: %w", t.kind, tier.OSErr("remove model", err))
	}
	return nil
}

// statMTime is the modification time of a stat result.
func statMTime(st *unix.Stat_t) time.Time {
	return time.Unix(st.Mtim.Sec, st.Mtim.Nsec)
}

// openBeneath opens the published file at rel, a path below the tier's
// root, read-only: beneath the root's descriptor and through no symbolic
// link, and only a regular file (package rootfs). A link planted in a
// shared tier's directory, by another host or a tenant with access to
// the share, so serves nothing outside the tier (ELOOP; the caller takes
// it as a missing file).
func (t *Tier) openBeneath(rel string) (*os.File, error) { return t.fs.OpenRegular(rel) }
