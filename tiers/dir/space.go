package dir

import (
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// The room of a directory tier is the smaller of two: its capacity minus
// what its index holds, and what its filesystem itself says is free
// (statfs f_bavail), less a slack for directories, xattrs and the temp
// file's own blocks. The index alone disagrees with the filesystem as
// soon as anything else lives there, or as the filesystem's own metadata
// grows, and a tier that believes it has room fails fsync with ENOSPC.
//
// statfs is asked at most every fsRefresh; in between, the bytes
// committed since the last answer are taken off it.

// FSSlack is kept free on a tier's filesystem beyond the file itself.
const FSSlack = 256 << 10

// fsRefresh is how old a statfs answer may be.
const fsRefresh = 200 * time.Millisecond

// fsSpace is a directory tier's view of its filesystem's free space.
type fsSpace struct {
	mu    sync.Mutex
	at    time.Time // when free was asked; zero: never
	free  int64     // f_bavail × f_bsize then, less what was committed since
	known bool
}

// fsFree returns the free bytes of the tier's filesystem (ok false when
// statfs fails: then only the index decides).
func (t *Tier) fsFree() (int64, bool) {
	s := &t.space
	s.mu.Lock()
	defer s.mu.Unlock()
	if time.Since(s.at) < fsRefresh {
		return s.free, s.known
	}
	var st unix.Statfs_t
	err := t.do("statfs", func() error { return t.fs.Statfs(&st) }, nil)
	s.at = time.Now()
	s.known = err == nil
	if s.known {
		s.free = int64(st.Bavail) * st.Bsize
	}
	return s.free, s.known
}

// fsTake takes n bytes off the estimate of free space (a commit); a
// shared tier counts them toward its next measure (shared_size.go).
func (t *Tier) fsTake(n int64) {
	s := &t.space
	s.mu.Lock()
	s.free -= n
	s.mu.Unlock()
	if sd := t.sharedDir(); sd != nil {
		sd.size.written.Add(n)
	}
}

// FSForget drops the estimate: the next fsFree asks statfs (after a
// removal, or when a write met ENOSPC).
func (t *Tier) FSForget() {
	s := &t.space
	s.mu.Lock()
	s.at = time.Time{}
	s.mu.Unlock()
}

// fsFull reports whether the filesystem lacks room for size more bytes.
func (t *Tier) fsFull(size int64) bool {
	free, ok := t.fsFree()
	return ok && free < size+FSSlack
}

// FSNeed returns how many bytes must be freed on the tier, by the index
// and by its filesystem, before a file of size bytes fits; 0 when it fits.
// A shared tier with a size measures the share first when due
// (shared_size.go).
func (t *Tier) FSNeed(size int64) int64 {
	sd := t.sharedDir()
	if sd != nil {
		sd.measure(size)
	}
	need := size - t.idx.Room()
	if free, ok := t.fsFree(); ok {
		need = max(need, size+FSSlack-free)
	}
	need = max(need, 0)
	if sd != nil {
		sd.needRoom(size, need)
	}
	return need
}
