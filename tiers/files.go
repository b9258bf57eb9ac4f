package tiers

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/ucmfs/ucmfs/format"
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

// publish moves tmp to dst unless dst exists, in which case it returns an
// error satisfying errors.Is(err, ErrExist) and leaves tmp in place. Other
// errors are the filesystem's (ENOENT when dst's directory is missing).
func (p *publisher) publish(tmp, dst string) error {
	for {
		mode := p.mode.Load()
		switch mode {
		case pubRenameat2:
			err := unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, dst, unix.RENAME_NOREPLACE)
			if err == nil {
				return nil
			}
			if errors.Is(err, unix.EINTR) {
				// A network or FUSE filesystem interrupted by a signal:
				// the rename happened or not; try again only if not.
				if moved(tmp, dst) {
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
			err := unix.Linkat(unix.AT_FDCWD, tmp, unix.AT_FDCWD, dst, 0)
			if errors.Is(err, unix.EINTR) {
				if linked(tmp, dst) {
					_ = ignoringEINTR(func() error { return unix.Unlink(tmp) })
					return nil
				}
				continue
			}
			if err == nil {
				// The block is published; a temp name that fails to go is
				// removed at the next start.
				_ = ignoringEINTR(func() error { return unix.Unlink(tmp) })
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
			err := ignoringEINTR(func() error { return unix.Lstat(dst, &st) })
			if err == nil {
				return fmt.Errorf("%w: %s", ErrExist, dst)
			}
			if !errors.Is(err, unix.ENOENT) {
				return err
			}
			err = unix.Rename(tmp, dst)
			if !errors.Is(err, unix.EINTR) {
				return err
			}
			if moved(tmp, dst) {
				return nil
			}
		}
	}
}

// moved reports whether an interrupted rename of tmp to dst happened:
// tmp is gone and dst is there.
func moved(tmp, dst string) bool {
	var st unix.Stat_t
	return errors.Is(lstat(tmp, &st), unix.ENOENT) && lstat(dst, &st) == nil
}

// linked reports whether an interrupted link of tmp to dst happened: both
// names are the same file.
func linked(tmp, dst string) bool {
	var a, b unix.Stat_t
	return lstat(tmp, &a) == nil && lstat(dst, &b) == nil && a.Dev == b.Dev && a.Ino == b.Ino
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

// ensure creates root/<model>/<shard> unless it is known to exist (for a
// File, its directory, and the model's tree mark). made reports that it
// was not known: a directory may have been made.
func (c *dirCache) ensure(root string, key format.Key) (made bool, err error) {
	rel := key.Model + "/" + key.ShardDir()
	c.mu.Lock()
	_, ok := c.known[rel]
	c.mu.Unlock()
	if ok {
		return false, nil
	}
	if err := os.MkdirAll(filepath.Join(root, rel), 0o755); err != nil {
		return true, osErr("mkdir", err)
	}
	if key.Kind == format.File {
		if err := markTree(filepath.Join(root, key.Model)); err != nil {
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

// openFile is os.OpenFile for regular files without its poller set-up:
// os.OpenFile tries to register every descriptor with the runtime's
// epoll (four fcntl and an epoll_ctl the kernel refuses for a regular
// file); this opens with one openat, the descriptor blocking, as
// os.NewFile leaves it. O_CLOEXEC is always added.
func openFile(path string, flag int, perm uint32) (*os.File, error) {
	return openAt(unix.AT_FDCWD, path, path, flag, perm)
}

// openAt is openFile of rel under the directory dirfd; name is the
// file's path in errors and the returned File's Name.
func openAt(dirfd int, rel, name string, flag int, perm uint32) (*os.File, error) {
	var fd int
	err := ignoringEINTR(func() (err error) {
		fd, err = unix.Openat(dirfd, rel, flag|unix.O_CLOEXEC, perm)
		return err
	})
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	return os.NewFile(uintptr(fd), name), nil
}
