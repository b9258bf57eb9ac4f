// Package ucmproto replays, on a directory, the syscall protocol UCM's
// PosixStore uses on its storage backend (docs/engines.md): shard
// directories made by mkdir, lookup by access(F_OK|R_OK|W_OK), dumps of
// <id>.tmp written by one thread per shard at shard*ShardSize +
// k*TensorSize and published by rename from the last shard's thread while
// the others may still write, loads by pread, hotness by utime, and GC by
// readdir, stat and unlink of the oldest files. Each step in psync,
// O_DIRECT or aio (io_submit) mode. Tests and benchmarks run it on a plain
// directory and on a ucmfs model directory and compare.
package ucmproto

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// Mode is the I/O engine of a store.
type Mode int

// The modes UCM runs in.
const (
	Psync  Mode = iota // pread/pwrite, buffered
	Direct             // pread/pwrite on O_DIRECT descriptors
	AIO                // io_submit on O_DIRECT descriptors, one request per shard
)

// String names the mode.
func (m Mode) String() string { return [...]string{"psync", "direct", "aio"}[m] }

// Store is one PosixStore over Root.
type Store struct {
	Root       string
	Width      int  // data_dir_shard_bytes: 0 ("data") to 4
	Mode       Mode // io engine
	Shards     int  // threads (tensor-parallel shards) per block
	ShardSize  int  // bytes per shard; a multiple of TensorSize and of 4096
	TensorSize int  // bytes per tensor
	Shuffle    bool // write each shard's tensors in a random order
}

// BlockSize is the size of a block file.
func (s *Store) BlockSize() int { return s.Shards * s.ShardSize }

// ShardNames are every shard directory name of the store's width.
func (s *Store) ShardNames() []string {
	if s.Width == 0 {
		return []string{"data"}
	}
	const digits = "0123456789abcdef"
	out := make([]string, 0, 1<<(4*s.Width))
	for i := range 1 << (4 * s.Width) {
		b := make([]byte, s.Width)
		for j := range b {
			b[j] = digits[(i>>(4*(s.Width-1-j)))&15]
		}
		out = append(out, string(b))
	}
	return out
}

// Path is the block file of id (tmp: its in-progress name).
func (s *Store) Path(id string, tmp bool) string {
	shard := "data"
	if s.Width > 0 {
		shard = id[:s.Width]
	}
	p := filepath.Join(s.Root, shard, id)
	if tmp {
		p += ".tmp"
	}
	return p
}

// Setup makes every shard directory (EEXIST is fine), then chmods it
// 0774, the result ignored.
func (s *Store) Setup() error {
	for _, name := range s.ShardNames() {
		p := filepath.Join(s.Root, name)
		if err := unix.Mkdir(p, 0o774); err != nil && !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("setup: mkdir %s: %w", p, err)
		}
		_ = unix.Chmod(p, 0o774)
	}
	return nil
}

// Lookup is access(F_OK|R_OK|W_OK): ENOENT is a miss, any other error is
// returned.
func (s *Store) Lookup(id string) (bool, error) {
	err := unix.Access(s.Path(id, false), unix.F_OK|unix.R_OK|unix.W_OK)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, unix.ENOENT):
		return false, nil
	}
	return false, fmt.Errorf("lookup %s: %w", id, err)
}

// openFlags are the flags of a dump's or load's descriptors.
func (s *Store) openFlags(write bool) int {
	fl := unix.O_RDONLY
	if write {
		fl = unix.O_WRONLY | unix.O_CREAT
	}
	if s.Mode != Psync {
		fl |= unix.O_DIRECT
	}
	return fl | unix.O_CLOEXEC
}

// Dump writes data (BlockSize bytes) as block id: every shard's thread
// opens <id>.tmp (all open before any writes), writes its tensors, and
// closes; the last shard's thread renames <id>.tmp to <id> as soon as its
// own writes are done. With fail set the dump fails after the writes and
// the last thread removes <id>.tmp instead. Close errors are ignored.
func (s *Store) Dump(id string, data []byte, fail bool) error {
	tmp := s.Path(id, true)
	fds := make([]int, s.Shards)
	for i := range fds {
		fd, err := unix.Open(tmp, s.openFlags(true), 0o644)
		if err != nil {
			for _, f := range fds[:i] {
				unix.Close(f)
			}
			return fmt.Errorf("dump %s: open: %w", id, err)
		}
		fds[i] = fd
	}
	return s.perShard(func(i int) error {
		defer unix.Close(fds[i])
		err := s.writeShard(fds[i], i, data)
		if i != s.Shards-1 {
			return err
		}
		if err == nil && !fail {
			err = unix.Rename(tmp, s.Path(id, false))
		}
		if err != nil || fail {
			_ = unix.Unlink(tmp)
		}
		return err
	})
}

// perShard runs fn for every shard index on its own goroutine and joins
// their errors.
func (s *Store) perShard(fn func(i int) error) error {
	errs := make([]error, s.Shards)
	var wg sync.WaitGroup
	for i := range s.Shards {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = fn(i)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// writeShard writes shard i of data through fd.
func (s *Store) writeShard(fd, i int, data []byte) error {
	base := i * s.ShardSize
	if s.Mode == AIO {
		buf := alignedCopy(data[base : base+s.ShardSize])
		defer unix.Munmap(buf)
		n, err := aioRW(fd, buf, int64(base), true)
		if err == nil && n != len(buf) {
			err = fmt.Errorf("short aio write: %d of %d", n, len(buf))
		}
		return err
	}
	ks := make([]int, s.ShardSize/s.TensorSize)
	for k := range ks {
		ks[k] = k
	}
	if s.Shuffle {
		rand.Shuffle(len(ks), func(a, b int) { ks[a], ks[b] = ks[b], ks[a] })
	}
	var buf []byte // O_DIRECT: an aligned copy of each tensor
	if s.Mode == Direct {
		buf = alignedBuf(s.TensorSize)
		defer unix.Munmap(buf)
	}
	for _, k := range ks {
		off := base + k*s.TensorSize
		src := data[off : off+s.TensorSize]
		if buf != nil {
			src = buf
			copy(src, data[off:])
		}
		n, err := unix.Pwrite(fd, src, int64(off))
		if err != nil {
			return fmt.Errorf("pwrite at %d: %w", off, err)
		}
		if n != s.TensorSize {
			return fmt.Errorf("short pwrite at %d: %d", off, n)
		}
	}
	return nil
}

// Load reads block id: one open and the shard's tensors (aio: one
// request) per shard thread.
func (s *Store) Load(id string) ([]byte, error) {
	out := make([]byte, s.BlockSize())
	return out, s.LoadInto(id, out)
}

// LoadInto is Load into out (BlockSize bytes).
func (s *Store) LoadInto(id string, out []byte) error {
	return s.perShard(func(i int) error { return s.readShard(id, i, out) })
}

// readShard reads shard i of block id into out.
func (s *Store) readShard(id string, i int, out []byte) error {
	fd, err := unix.Open(s.Path(id, false), s.openFlags(false), 0)
	if err != nil {
		return fmt.Errorf("load %s: open: %w", id, err)
	}
	defer unix.Close(fd)
	base := i * s.ShardSize
	step := s.TensorSize
	if s.Mode == AIO {
		step = s.ShardSize
	}
	var buf []byte
	if s.Mode != Psync {
		buf = alignedBuf(step)
		defer unix.Munmap(buf)
	}
	for off := base; off < base+s.ShardSize; off += step {
		dst := out[off : off+step]
		if buf != nil {
			dst = buf
		}
		var n int
		if s.Mode == AIO {
			n, err = aioRW(fd, dst, int64(off), false)
		} else {
			n, err = unix.Pread(fd, dst, int64(off))
		}
		if err != nil {
			return fmt.Errorf("load %s at %d: %w", id, off, err)
		}
		if n != step {
			return fmt.Errorf("load %s at %d: %d bytes of %d", id, off, n, step)
		}
		if buf != nil {
			copy(out[off:], buf)
		}
	}
	return nil
}

// Touch is the hotness tracker's utime(path, NULL) after a hit.
func (s *Store) Touch(id string) error {
	return unix.Utimes(s.Path(id, false), nil)
}

// FileInfo is a block file GC found: its id and mtime in seconds.
type FileInfo struct {
	ID    string
	MTime int64
}

// Scan lists every shard as GC does: names starting with '.' or
// containing ".tmp" skipped, each other name stat'ed, regular files kept.
func (s *Store) Scan() ([]FileInfo, error) {
	var out []FileInfo
	for _, shard := range s.ShardNames() {
		dir := filepath.Join(s.Root, shard)
		ents, err := os.ReadDir(dir)
		if err != nil {
			return nil, fmt.Errorf("gc: readdir %s: %w", dir, err)
		}
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), ".") || strings.Contains(e.Name(), ".tmp") {
				continue
			}
			var st unix.Stat_t
			if err := unix.Stat(filepath.Join(dir, e.Name()), &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
				continue
			}
			out = append(out, FileInfo{ID: e.Name(), MTime: st.Mtim.Sec})
		}
	}
	return out, nil
}

// GC removes the n files with the oldest mtime (ties by id) and returns
// their ids, sorted.
func (s *Store) GC(n int) ([]string, error) {
	files, err := s.Scan()
	if err != nil {
		return nil, err
	}
	sort.Slice(files, func(i, j int) bool {
		if files[i].MTime != files[j].MTime {
			return files[i].MTime < files[j].MTime
		}
		return files[i].ID < files[j].ID
	})
	var gone []string
	for _, f := range files[:min(n, len(files))] {
		if err := unix.Unlink(s.Path(f.ID[:32], false)); err != nil {
			return gone, fmt.Errorf("gc: remove %s: %w", f.ID, err)
		}
		gone = append(gone, f.ID)
	}
	sort.Strings(gone)
	return gone, nil
}

// alignedBuf is n bytes of page-aligned memory (munmap it).
func alignedBuf(n int) []byte {
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		panic(err)
	}
	return b
}

// alignedCopy is a page-aligned copy of src (munmap it).
func alignedCopy(src []byte) []byte {
	b := alignedBuf(len(src))
	copy(b, src)
	return b
}
