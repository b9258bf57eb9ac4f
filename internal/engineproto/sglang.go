package engineproto

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// SGLangFile is SGLang's HiCache file backend (HiCacheFile in
// python/sglang/srt/mem_cache/hicache_storage.py) over Root: flat pages
// <hash>_<model with '/' as '-'>_<tp_rank>_<tp_size>.bin; a set skips a
// present page, writes <page>.tmp.<pid>.<tid>.<uuid> with numpy's tofile
// (open "wb": O_WRONLY|O_CREAT|O_TRUNC) and os.replace's it; a get reads
// into the page buffer (readinto, unbuffered) and fails on less; exists
// is a stat; clear lists the directory and removes every file.
type SGLangFile struct {
	Root, Salt string
	Model      string
	TPRank     int
	TPSize     int
}

// Name names the backend.
func (s *SGLangFile) Name() string { return "sglang-file" }

// Setup makes the storage directory when it is missing.
func (s *SGLangFile) Setup() error {
	if ok, err := exists(s.Root); err != nil || ok {
		return err
	}
	return os.MkdirAll(s.Root, 0o777)
}

// Path is the page file of block i.
func (s *SGLangFile) Path(i int) string {
	suffix := fmt.Sprintf("_%s_%d_%d", strings.ReplaceAll(s.Model, "/", "-"), s.TPRank, s.TPSize)
	return filepath.Join(s.Root, hash64(s.Salt, i)+suffix+".bin")
}

// Exists is exists.
func (s *SGLangFile) Exists(i int) (bool, error) { return exists(s.Path(i)) }

// Store is set.
func (s *SGLangFile) Store(i int, data []byte) error {
	p := s.Path(i)
	if ok, err := exists(p); err != nil || ok {
		return err
	}
	tmp := fmt.Sprintf("%s.tmp.%d.%d.%s", p, os.Getpid(), unix.Gettid(), uuidHex())
	fd, err := unix.Open(tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|unix.O_CLOEXEC, 0o666)
	if err == nil {
		err = writeAll(fd, data, 0)
		unix.Close(fd)
	}
	if err == nil {
		err = unix.Rename(tmp, p)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("failed to save tensor %d: %w", i, err)
	}
	return nil
}

// Load is get: open "rb" unbuffered, readinto the page; fewer bytes than
// the page fail.
func (s *SGLangFile) Load(i, n int) ([]byte, error) {
	fd, err := unix.Open(s.Path(i), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	buf := make([]byte, n)
	r, err := unix.Read(fd, buf)
	if err != nil {
		return nil, err
	}
	if r != n {
		return nil, fmt.Errorf("short read for %d: %d of %d", i, r, n)
	}
	return buf, nil
}

// Delete removes block i's page (the LRU evictor's os.remove).
func (s *SGLangFile) Delete(i int) error { return os.Remove(s.Path(i)) }

// Clear is clear: every regular file of the directory removed.
func (s *SGLangFile) Clear() error {
	ents, err := os.ReadDir(s.Root)
	if err != nil {
		return err
	}
	for _, e := range ents {
		p := filepath.Join(s.Root, e.Name())
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			if err := os.Remove(p); err != nil {
				return err
			}
		}
	}
	return nil
}

// uuidHex is uuid.uuid4().hex.
func uuidHex() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// SGLangFastFile is SGLang's HiCache fast_file backend
// (storage/fast_file/fast_file_store.py) over Root: pages of the file
// backend's names in namespace-<24hex>/; a set stats the page (a page of
// the right size is kept), writes <page>.tmp.<pid>.<tid>.<uuid> opened
// O_WRONLY|O_CREAT|O_EXCL 0600 with writev, and os.replace's it; a get
// opens the page, fstats it (a size other than the page's is a corrupt
// page: removed) and readv's it whole.
type SGLangFastFile struct {
	SGLangFile
	ns string
}

// Name names the backend.
func (f *SGLangFastFile) Name() string { return "sglang-fast_file" }

// Setup makes the namespace directory.
func (f *SGLangFastFile) Setup() error {
	f.ns = filepath.Join(f.Root, "namespace-"+hash64(f.Salt, -2)[:24])
	return os.MkdirAll(f.ns, 0o777)
}

// Path is the page file of block i in the namespace.
func (f *SGLangFastFile) Path(i int) string {
	return filepath.Join(f.ns, filepath.Base(f.SGLangFile.Path(i)))
}

// Exists is exists.
func (f *SGLangFastFile) Exists(i int) (bool, error) { return exists(f.Path(i)) }

// Store is _write_page_buffers with one buffer.
func (f *SGLangFastFile) Store(i int, data []byte) error {
	p := f.Path(i)
	var st unix.Stat_t
	err := unix.Stat(p, &st)
	if err == nil && st.Size == int64(len(data)) {
		return nil
	}
	if err != nil && err != unix.ENOENT {
		return err
	}
	tmp := fmt.Sprintf("%s.tmp.%d.%d.%s", p, os.Getpid(), unix.Gettid(), uuidHex())
	fd, err := unix.Open(tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	half := len(data) / 2
	iov := [][]byte{data[:half], data[half:]}
	for len(iov) > 0 {
		n, werr := unix.Writev(fd, iov)
		if werr != nil {
			err = werr
			break
		}
		for n > 0 && len(iov) > 0 {
			if n >= len(iov[0]) {
				n -= len(iov[0])
				iov = iov[1:]
			} else {
				iov[0] = iov[0][n:]
				n = 0
			}
		}
	}
	unix.Close(fd)
	if err == nil {
		err = unix.Rename(tmp, p)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// Load is _read_page_buffers: fstat must give the page's size, then
// readv to the end.
func (f *SGLangFastFile) Load(i, n int) ([]byte, error) {
	p := f.Path(i)
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, err
	}
	if st.Size != int64(n) {
		os.Remove(p)
		return nil, fmt.Errorf("page size mismatch: expected %d bytes, found %d", n, st.Size)
	}
	buf := make([]byte, n)
	got := 0
	for got < n {
		r, err := unix.Readv(fd, [][]byte{buf[got:]})
		if err != nil {
			return nil, err
		}
		if r == 0 {
			break
		}
		got += r
	}
	if got != n {
		return nil, fmt.Errorf("short read: expected %d bytes, got %d", n, got)
	}
	return buf, nil
}

// Delete removes block i's page.
func (f *SGLangFastFile) Delete(i int) error { return os.Remove(f.Path(i)) }
