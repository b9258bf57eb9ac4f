package engineproto

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// LLMD is llm-d's fs backend (kv_connectors/llmd_fs_backend, csrc
// storage/backends/fs_io/file_io.cpp) over Root, with vLLM's file names
// (its file mapper is vLLM's): a store makes the parent directories,
// writes <final>_<rand>.tmp opened O_RDWR|O_CREAT 0664 (no O_TRUNC, no
// O_EXCL) in 4 MiB writes, renames it over the final name while it is
// still open, then closes it and removes the temporary name (ENOENT); a
// load opens the file, takes its size by seeking to the end, seeks back
// and reads it whole; a hit is marked by utimensat of the atime only.
type LLMD struct {
	VLLM
}

// Name names the backend.
func (l *LLMD) Name() string { return "llm-d-fs" }

// Setup is vLLM's run config, without the O_DIRECT probe.
func (l *LLMD) Setup() error {
	direct := l.Direct
	l.Direct = false
	defer func() { l.Direct = direct }()
	return l.VLLM.Setup()
}

// Store is write_buffer_to_file.
func (l *LLMD) Store(i int, data []byte) error {
	dest := l.Path(i)
	if ok, err := exists(dest); err != nil || ok {
		return err
	}
	if err := makedirs(parent(dest)); err != nil {
		return err
	}
	tmp := dest + l.suffix
	fd, err := unix.Open(tmp, unix.O_RDWR|unix.O_CREAT|unix.O_CLOEXEC, 0o664)
	if err != nil {
		return fmt.Errorf("open temporary %s: %w", tmp, err)
	}
	err = writeAll(fd, data, 4<<20)
	if err == nil {
		err = unix.Rename(tmp, dest)
	}
	unix.Close(fd)
	os.Remove(tmp) // TmpFile's cleanup: gone after the rename
	return err
}

// Load is read_buffer_from_file, then update_atime.
func (l *LLMD) Load(i, n int) ([]byte, error) {
	p := l.Path(i)
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	size, err := unix.Seek(fd, 0, 2)
	if err != nil {
		return nil, err
	}
	if _, err := unix.Seek(fd, 0, 0); err != nil {
		return nil, err
	}
	if int(size) > n {
		return nil, fmt.Errorf("staging buffer too small for %s: %d > %d", p, size, n)
	}
	buf, err := readAll(fd, int(size))
	if err != nil || len(buf) != int(size) {
		return nil, fmt.Errorf("failed to read full file %s: %d/%d (%v)", p, len(buf), size, err)
	}
	ts := []unix.Timespec{{Nsec: unix.UTIME_NOW}, {Nsec: unix.UTIME_OMIT}}
	_ = unix.UtimesNanoAt(unix.AT_FDCWD, p, ts, 0)
	return buf, nil
}
