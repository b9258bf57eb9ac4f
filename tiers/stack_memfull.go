package tiers

import (
	"errors"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The memory tier's filesystem can be full while its capacity shows room:
// a tmpfs runs out of inodes (its nr_inodes) before its bytes, and its
// size holds the files being written too. A create or write there that
// fails with ENOSPC is then not the client's fault: MemFull makes room as
// a full capacity would (evicting clean files, which a directory tier
// still holds) so that the caller retries once, counts it (mem_full in
// the stats) and logs it, at most once a minute.

// memFullLogEvery spaces the log lines of MemFull.
const memFullLogEvery = time.Minute

// IsNoSpace reports whether err is the filesystem's ENOSPC.
func IsNoSpace(err error) bool { return errors.Is(err, syscall.ENOSPC) }

// MemFull evicts clean files from the memory tier, need bytes' worth
// beyond the room its capacity shows (at least 64 KiB), after an ENOSPC
// from its filesystem. It reports whether any file went: the caller then
// retries its create or write once.
func (s *Stack) MemFull(need int64) bool {
	s.stats.memFull.Add(1)
	need = max(need, 64<<10)
	room := s.mem.Index().Room()
	freed, ev := s.mem.EvictClean(max(room, 0) + need)
	if len(ev) > 0 {
		s.stats.evictions.Add(int64(len(ev)))
		s.signalRoom()
	}
	if now := time.Now().UnixNano(); now-s.memFullLogged.Load() > int64(memFullLogEvery) {
		s.memFullLogged.Store(now)
		s.log.Warn("memory tier's filesystem full (ENOSPC) while its capacity shows room: clean files evicted to make room; give the tmpfs more inodes or size, or lower --memory",
			"dir", s.mem.Dir(), "evicted", len(ev), "freed", freed, "capacity_room", room)
	}
	return len(ev) > 0
}

// memFullState is the Stack's part of MemFull: when it last logged.
type memFullState struct{ memFullLogged atomic.Int64 }

// memFSFullSlack is how little free space makes the memory tier's
// filesystem count as full for MemFSFull: a write into a tmpfs fails when
// no page (or, with huge pages, no 2 MiB page) is left.
const memFSFullSlack = 2 << 20

// MemFSFull reports whether the memory tier's filesystem is full (less
// than memFSFullSlack free); false when its statfs fails (nothing known:
// publishes go on as before). A write the kernel makes itself into a file
// being written (FUSE passthrough) fails there with ENOSPC, and the
// daemon, which sees no such write, can only tell by this that one may
// have failed (store: a file open for writing then never publishes).
func (s *Stack) MemFSFull() bool {
	var st unix.Statfs_t
	if err := s.mem.Root().Statfs(&st); err != nil {
		return false
	}
	return int64(st.Bavail)*st.Bsize < memFSFullSlack
}
