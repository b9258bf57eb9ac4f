package engineproto

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// LMCache is LMCache's fs_native connector (csrc/storage_backends/fs/
// connector.cpp) over Root: flat files <model with '/' as -SEP->@0x<rank
// hex>@<chunk hash hex>.data; a set skips a present file, writes
// <name>.tmp (the extension replaced) opened O_CREAT|O_WRONLY|O_TRUNC
// (|O_DIRECT when the buffer and length fit the statvfs block size),
// closes and renames it; a get reads to the requested length and fails
// on less; exists is a stat, delete a remove.
type LMCache struct {
	Root, Salt string
	Model      string
	Rank       int
	Direct     bool
	block      int
}

// Name names the backend.
func (l *LMCache) Name() string { return "lmcache-fs_native" }

// Setup makes the base directory and reads its block size (statvfs) for
// O_DIRECT.
func (l *LMCache) Setup() error {
	if err := makedirs(l.Root); err != nil {
		return err
	}
	if l.Direct {
		var st unix.Statfs_t
		if err := unix.Statfs(l.Root, &st); err == nil {
			l.block = int(st.Bsize)
		}
	}
	return nil
}

// Path is key_to_filename of block i under the base.
func (l *LMCache) Path(i int) string {
	model := strings.ReplaceAll(l.Model, "/", "-SEP-")
	return filepath.Join(l.Root, fmt.Sprintf("%s@0x%x@%s.data", model, l.Rank, hash64(l.Salt, i)))
}

// Exists is do_single_exists.
func (l *LMCache) Exists(i int) (bool, error) { return exists(l.Path(i)) }

// direct reports whether O_DIRECT applies to n bytes (try_enable_odirect;
// the buffers here are page-aligned).
func (l *LMCache) direct(n int) bool { return l.Direct && l.block > 0 && n%l.block == 0 }

// Store is do_single_set.
func (l *LMCache) Store(i int, data []byte) error {
	p := l.Path(i)
	if ok, err := exists(p); err != nil || ok {
		return err
	}
	tmp := strings.TrimSuffix(p, ".data") + ".tmp"
	fl := unix.O_CREAT | unix.O_WRONLY | unix.O_TRUNC | unix.O_CLOEXEC
	buf := data
	if l.direct(len(data)) {
		fl |= unix.O_DIRECT
		buf = alignedBuf(len(data))
		defer unix.Munmap(buf)
		copy(buf, data)
	}
	fd, err := unix.Open(tmp, fl, 0o644)
	if err != nil {
		return fmt.Errorf("open for write failed: %s: %w", tmp, err)
	}
	err = writeAll(fd, buf, 0)
	unix.Close(fd)
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if err := unix.Rename(tmp, p); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("rename failed: %s -> %s: %w", tmp, p, err)
	}
	return nil
}

// Load is do_single_get: read to n bytes; fewer is an error.
func (l *LMCache) Load(i, n int) ([]byte, error) {
	p := l.Path(i)
	fl := unix.O_RDONLY | unix.O_CLOEXEC
	if l.direct(n) {
		fl |= unix.O_DIRECT
	}
	fd, err := unix.Open(p, fl, 0)
	if err != nil {
		return nil, fmt.Errorf("open for read failed: %s: %w", p, err)
	}
	defer unix.Close(fd)
	buf := alignedBuf(n)
	defer unix.Munmap(buf)
	got, err := readInto(fd, buf)
	if err != nil {
		return nil, err
	}
	if got != n {
		return nil, fmt.Errorf("incomplete read for %s: expected %d, got %d", p, n, got)
	}
	return bytes.Clone(buf), nil
}

// Delete is do_single_delete (std::filesystem::remove).
func (l *LMCache) Delete(i int) error {
	err := unix.Unlink(l.Path(i))
	if err == unix.ENOENT {
		return nil
	}
	return err
}
