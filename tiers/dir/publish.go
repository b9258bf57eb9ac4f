package dir

import (
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/ucmfs/ucmfs/tiers/rootfs"
	"github.com/ucmfs/ucmfs/tiers/tier"
	"golang.org/x/sys/unix"
)

// This file holds how a directory tier publishes its files: the
// no-replace rename with its fallbacks, and the CRC-32C kept in an
// extended attribute.

// Publish methods, tried in this order; a tier remembers the first one its
// filesystem supports.
const (
	// pubRenameat2: renameat2(RENAME_NOREPLACE), atomic and no-replace.
	pubRenameat2 int32 = iota
	// pubLink: link() then unlink() of the temp name; link never
	// replaces, so this is atomic and no-replace too (NFS takes this path).
	pubLink
	// pubCheckRename: check that the name is free, then rename. Not
	// atomic against another writer: the last resort of a filesystem
	// that has neither renameat2 flags nor hard links.
	pubCheckRename
)

// publisher publishes temp files under their final names without ever
// replacing a file.
type publisher struct {
	mode atomic.Int32
}

// publish moves tmp to dst (both beneath r) unless dst exists, in which
// case it returns an error satisfying errors.Is(err, ErrExist) and leaves
// tmp in place. Other errors are the filesystem's (ENOENT when dst's
// directory is missing).
func (p *publisher) publish(r rootfs.FS, tmp, dst string) error {
	for {
		mode := p.mode.Load()
		switch mode {
		case pubRenameat2:
			err := renameOnce(r, tmp, dst, unix.RENAME_NOREPLACE)
			if err == nil {
				return nil
			}
			if errors.Is(err, unix.EINTR) {
				// A network or FUSE filesystem interrupted by a signal:
				// the rename happened or not; try again only if not.
				if moved(r, tmp, dst) {
					return nil
				}
				continue
			}
			if errors.Is(err, unix.EEXIST) {
				return fmt.Errorf("%w: %s", tier.ErrExist, dst)
			}
			if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP) {
				p.mode.CompareAndSwap(mode, pubLink)
				continue
			}
			return err
		case pubLink:
			err := linkOnce(r, tmp, dst)
			if errors.Is(err, unix.EINTR) {
				if linked(r, tmp, dst) {
					_ = r.Unlink(tmp)
					return nil
				}
				continue
			}
			if err == nil {
				// The block is published; a temp name that fails to go is
				// removed at the next start.
				_ = r.Unlink(tmp)
				return nil
			}
			if errors.Is(err, unix.EEXIST) {
				return fmt.Errorf("%w: %s", tier.ErrExist, dst)
			}
			if errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOSYS) ||
				errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EXDEV) || errors.Is(err, unix.EMLINK) {
				p.mode.CompareAndSwap(mode, pubCheckRename)
				continue
			}
			return err
		default:
			var st unix.Stat_t
			err := r.Lstat(dst, &st)
			if err == nil {
				return fmt.Errorf("%w: %s", tier.ErrExist, dst)
			}
			if !errors.Is(err, unix.ENOENT) {
				return err
			}
			err = renameOnce(r, tmp, dst, 0)
			if !errors.Is(err, unix.EINTR) {
				return err
			}
			if moved(r, tmp, dst) {
				return nil
			}
		}
	}
}

// renameOnce is r.Rename with EINTR returned, not retried: the callers
// check whether an interrupted rename happened (moved).
func renameOnce(r rootfs.FS, tmp, dst string, flags uint) error {
	return r.RenameOnce(tmp, dst, flags)
}

// linkOnce is r.Link with EINTR returned (linked checks it).
func linkOnce(r rootfs.FS, tmp, dst string) error { return r.LinkOnce(tmp, dst) }

// moved reports whether an interrupted rename of tmp to dst happened:
// tmp is gone and dst is there.
func moved(r rootfs.FS, tmp, dst string) bool {
	var st unix.Stat_t
	return errors.Is(r.Lstat(tmp, &st), unix.ENOENT) && r.Lstat(dst, &st) == nil
}

// linked reports whether an interrupted link of tmp to dst happened: both
// names are the same file.
func linked(r rootfs.FS, tmp, dst string) bool {
	var a, b unix.Stat_t
	return r.Lstat(tmp, &a) == nil && r.Lstat(dst, &b) == nil && a.Dev == b.Dev && a.Ino == b.Ino
}

// crcXattr is the extended attribute that keeps a file's payload CRC-32C
// as 8 lowercase hex characters.
const crcXattr = "user.ucm.crc32c"

// formatCRC formats a CRC as 8 lowercase hex characters.
func formatCRC(crc uint32) []byte {
	return fmt.Appendf(nil, "%08x", crc)
}

// parseCRC parses 8 lowercase hex characters.
func parseCRC(b []byte) (uint32, bool) {
	if len(b) != 8 {
		return 0, false
	}
	for _, c := range b {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return 0, false
		}
	}
	v, err := strconv.ParseUint(string(b), 16, 32)
	return uint32(v), err == nil
}
