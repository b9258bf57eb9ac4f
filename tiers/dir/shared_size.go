package dir

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/ucmfs/ucmfs/format"
)

// A size on a shared tier (the tier entry's size, the same on every
// host) bounds the share, not one host's part of it. Each host admits a
// write by its index of the share, and its index learns what the other
// hosts wrote only when it checks their directories; and every host
// spared the files younger than KeepRecent, so that a share filled at
// once by several hosts stayed over its size for ten minutes. (Measured:
// three hosts writing 16 MiB each into a 16 MiB share left 36 MiB on
// CephFS, 22 on GlusterFS.) What holds now:
//
//   - Measure. Before it admits a write (FSNeed), a host with a size on
//     its shared tier checks every shard directory of the share again
//     (walkAll: a stat of each, a listing of those that changed, so that
//     its index holds what the others wrote) once it has added
//     measureStep of the size to the share since it last did, or a TTL
//     passed. The cost is one walk of the share per measureStep written,
//     at most one at a time (the others wait for it).
//   - Bound. A host admits a write when its view, the share as of its
//     last measure plus what it published since, leaves room; what the
//     others published since its measure is missing from that view. Of
//     two hosts the later to measure saw what the other had published
//     before, so what passes the size is what one of them published since
//     its own measure: at most measureStep of the size plus the files it
//     has in flight (its write-back workers'). For N hosts writing at
//     once the share's use is at most its size plus (N-1) x (size /
//     measureStep + F), F the bytes one host has in flight: 16 MiB, three
//     hosts, two workers writing 1 MiB files: 16 + 2 x (1 + 2) = 22 MiB.
//     A measure is a walk of directories other hosts change meanwhile,
//     not an instant: the bound is as good as the filesystem's listings
//     are fresh (CephFS and GlusterFS with the client caches off that
//     docs/operations.md names).
//   - Evict. While the share is over its size, or a write of this host
//     waits for room on it, KeepRecent yields: once the files older than
//     it went, the younger go too, oldest first as this host knows them
//     (mayEvict, yieldRecent). Nothing another host is reading is lost so:
//     reads copy a shared file to memory before they answer (the stack's
//     shared reads), and a copy under way keeps its descriptor.
//
// Without a size, the share's capacity is its filesystem's free space
// (setFreeCapacity) and the filesystem itself refuses what passes it.

// measureStep is the part of the size a host writes to the share between
// two measures of it.
const measureStep = 16

// sizeCheck is when a shared tier with a size last measured its share.
type sizeCheck struct {
	sized bool       // the tier has a size (Config.Capacity)
	mu    sync.Mutex // one measure at a time
	at    time.Time  // when the last measure began, under mu
	// written is the bytes this host published on the share since the
	// last measure began (fsTake).
	written atomic.Int64
	// want is the room a write of this host waits for (FSNeed found it
	// short): KeepRecent yields until it is made.
	want atomic.Int64
	// passed are the files younger than KeepRecent that eviction passed
	// over while the share was full: at the next look, the older files
	// having gone first, they go (yieldRecent).
	passedMu sync.Mutex
	passed   map[format.Key]time.Time // when each was passed over
	lastOld  time.Time                // when eviction last met a file older than KeepRecent
}

// measureDue reports whether the share must be measured before size more
// bytes are admitted: this host published measureStep of the capacity
// since the last measure began, or a TTL passed since.
func (t *sharedDir) measureDue(size int64) bool {
	if t.size.written.Load()+size >= t.idx.Usage().Capacity/measureStep {
		return true
	}
	t.size.mu.Lock()
	defer t.size.mu.Unlock()
	return time.Since(t.size.at) >= t.view.ttl
}

// measure brings the index to the share's use before size bytes are
// admitted, when due (measureDue): a host with no size on its shared
// tier, or whose background scan is not done, does nothing.
func (t *sharedDir) measure(size int64) {
	if !t.size.sized || t.view.ttl < 0 || !t.scanned() || !t.measureDue(size) {
		return
	}
	asked := time.Now()
	t.size.mu.Lock()
	defer t.size.mu.Unlock()
	if t.size.at.After(asked) {
		return // measured by another writer since this one asked
	}
	t.size.at = time.Now()
	t.size.written.Store(0)
	t.walkShards(walkAll)
}

// needRoom records what FSNeed found: the room a write waits for (0:
// none).
func (t *sharedDir) needRoom(size, need int64) {
	if need > 0 {
		t.size.want.Store(size)
	} else {
		t.size.want.Store(0)
	}
}

// full reports whether the share is over its size, or short of the room
// a write of this host waits for: KeepRecent then yields.
func (t *sharedDir) full() bool {
	if !t.size.sized {
		return false
	}
	room := t.idx.Room()
	return room < 0 || room < t.size.want.Load()
}

// yieldRecent reports whether key, younger than KeepRecent, may go: the
// share is full, and eviction passed over key once already while it was
// and met no file older than KeepRecent since (sawOld). Passed over, a
// file goes to the recent end of the order (the stack's Touch), so every
// other file is looked at before it again: the older ones go first,
// whatever this host's order of the share (the order it learned the
// files in, not their mtimes).
func (t *sharedDir) yieldRecent(key format.Key) bool {
	s := &t.size
	s.passedMu.Lock()
	defer s.passedMu.Unlock()
	if !t.full() {
		s.passed = nil
		return false
	}
	if at, ok := s.passed[key]; ok && s.lastOld.Before(at) {
		delete(s.passed, key)
		return true
	}
	if s.passed == nil {
		s.passed = make(map[format.Key]time.Time)
	}
	s.passed[key] = time.Now()
	return false
}

// sawOld records that eviction met a file older than KeepRecent.
func (t *sharedDir) sawOld() {
	s := &t.size
	s.passedMu.Lock()
	s.lastOld = time.Now()
	s.passedMu.Unlock()
}
