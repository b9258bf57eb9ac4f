package tiers

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/tiers/rootfs"
	"golang.org/x/sys/unix"
)

// This file holds what both tiers use to publish files: the no-replace
// rename with its fallbacks, temp names, key checks and error wrapping.

// tmpPrefix starts the name of every temporary file of a tier. No valid
// model, shard or block name starts with '.', so temp files never look
// like published ones; in a files model's tree, where an engine may name
// its files anything, a temp file is one of IsTempName's form only.
const tmpPrefix = ".tmp-"

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
				return fmt.Errorf("%w: %s", ErrExist, dst)
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
				return fmt.Errorf("%w: %s", ErrExist, dst)
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
				return fmt.Errorf("%w: %s", ErrExist, dst)
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

// randomSuffix returns 16 hex characters for temp and directory names.
func randomSuffix() string {
	return fmt.Sprintf("%016x", rand.Uint64())
}

// osErr wraps a filesystem error with the operation. ENOSPC and EDQUOT
// also satisfy errors.Is(err, ErrFull); the errno stays reachable.
func osErr(op string, err error) error {
	if errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EDQUOT) {
		return fmt.Errorf("%s: %w: %w", op, ErrFull, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// notFound turns ENOENT into ErrNotFound (keeping the errno reachable) and
// wraps other errors like osErr.
func notFound(op string, err error) error {
	if errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("%s: %w: %w", op, ErrNotFound, err)
	}
	return osErr(op, err)
}

// checkKey rejects keys whose model is not a valid model directory name,
// so no key can name a path outside the tier.
func checkKey(key format.Key) error {
	if err := format.ValidateModel(key.Model); err != nil {
		return err
	}
	if !key.Kind.Valid() {
		return fmt.Errorf("%w: kind %d", format.ErrName, key.Kind)
	}
	if key.Kind == format.File {
		if err := format.ValidateFilePath(key.Name); err != nil {
			return err
		}
		if key.ID != format.FileID(key.Name) {
			return fmt.Errorf("%w: %s: id is not the path's", format.ErrName, key)
		}
	}
	return nil
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

// fileStat returns the size and modification time of an open file.
func fileStat(f *os.File) (os.FileInfo, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, osErr("fstat", err)
	}
	return fi, nil
}

// dirCache remembers which <model>/<hh> directories exist under a root, so
// publishing does not stat them every time.
type dirCache struct {
	mu    sync.Mutex
	known map[string]struct{}
}

// ensure creates <model>/<shard> beneath r unless it is known to exist
// (for a File, its directory, and the model's tree mark). made reports
// that it was not known: a directory may have been made.
func (c *dirCache) ensure(r rootfs.FS, key format.Key) (made bool, err error) {
	rel := key.Model + "/" + key.ShardDir()
	c.mu.Lock()
	_, ok := c.known[rel]
	c.mu.Unlock()
	if ok {
		return false, nil
	}
	if err := mkdirAllDurable(r, strings.TrimSuffix(rel, "/"), 0o755); err != nil {
		return true, osErr("mkdir", err)
	}
	if key.Kind == format.File {
		if err := markTree(r, key.Model); err != nil {
			return true, err
		}
	}
	c.mu.Lock()
	if c.known == nil {
		c.known = make(map[string]struct{})
	}
	c.known[rel] = struct{}{}
	c.mu.Unlock()
	return true, nil
}

// mkdirAllDurable makes rel and its missing parents beneath r, and
// fsyncs the parent of each directory it made, so that the new names are
// durable: a file fsynced with its own directory is found after a power
// cut only if every directory above it is (the fsyncs of a file and of
// its directory make neither the directory's own name durable).
func mkdirAllDurable(r rootfs.FS, rel string, perm uint32) error {
	var st unix.Stat_t
	if r.Lstat(rel, &st) == nil {
		if st.Mode&unix.S_IFMT != unix.S_IFLNK {
			return r.MkdirAll(rel, perm) // there: MkdirAll refuses a file
		}
		// A link where a directory of the layout goes (planted on a
		// share, or where the tier wrote before): it is removed, the link
		// itself, and the directory made; it kept every write there
		// failing.
		if err := r.Unlink(rel); err != nil && !errors.Is(err, unix.ENOENT) {
			return err
		}
	}
	parent := path.Dir(rel)
	if parent != "." {
		if err := mkdirAllDurable(r, parent, perm); err != nil {
			return err
		}
	}
	if err := r.Mkdir(rel, perm); err != nil && !errors.Is(err, unix.EEXIST) {
		return err
	}
	return r.SyncDir(parent) // also when another made it meanwhile: it may not have synced yet
}

// forget drops what is known about model ("" forgets everything).
func (c *dirCache) forget(model string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for rel := range c.known {
		if model == "" || strings.HasPrefix(rel, model+"/") {
			delete(c.known, rel)
		}
	}
}
