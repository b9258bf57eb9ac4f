package fs

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/ucmfs/ucmfs/tiers"
	"golang.org/x/sync/singleflight"
	"golang.org/x/sys/unix"
)

// fsState is what every node of one mount shares, by pointer: the stack,
// the options and the mount's tables.
//
// Lock order: every mutex below is a leaf (models.mu, hits.mu,
// pending.mu, quotas.mu, listings.mu, inoTable.mu, reprKinds.mu,
// reprCache.mu): none is held while another is taken or while the stack
// is called (the walks that quotas and listings trigger run with their
// lock released). The exception is
// pins.mu, held while the memory tier's pin flag of a key changes, so
// that the flag and the table agree (control_gpu_pins.go); it is taken before
// the stack's locks and never under another mutex of this package.
type fsState struct {
	stack   *tiers.Stack
	opts    Options
	log     *slog.Logger
	uid     uint32
	gid     uint32
	mounted time.Time

	inos     *inoTable
	models   modelSet
	hits     hitTable
	pending  pendingSet
	quotas   quotaTable
	listings listCache

	control  controlAccess   // who may open the session control files
	ctl      controlCounters // control plane requests
	tierIO   []tierIO        // bytes clients moved, per tier (0 memory, then dirs)
	prefetch prefetcher      // the promotion pool of .ucm/prefetch
	metrics  *mountMetrics   // latency histograms
	pins     loadPins        // blocks pinned by GPU loads in flight
	root     *gofs.Inode     // the root node, once mounted

	reprKinds reprSettings       // per-model sidecar kinds (user.ucm.repr_kind)
	derives   singleflight.Group // sidecar derivations in flight, by path
	reprCache *reprCache         // sidecar files .ucm/topk read or derived

	seq          atomic.Uint64 // numbers of files being written
	daemonReads  atomic.Int64  // read requests the daemon served (none with passthrough)
	daemonWrites atomic.Int64  // write requests the daemon served (none with passthrough)
	passthrough  atomic.Bool   // hand the kernel backing fds
	stopped      atomic.Bool   // StopWrites was called
}

func newState(st *tiers.Stack, opts Options) *fsState {
	opts.setDefaults()
	s := &fsState{
		stack:   st,
		opts:    opts,
		log:     opts.Logger,
		uid:     uint32(syscall.Getuid()),
		gid:     uint32(syscall.Getgid()),
		mounted: time.Now(),
		inos:    newInoTable(),
		tierIO:  make([]tierIO, 1+len(st.Dirs())),
		metrics: newMountMetrics(),
	}
	s.control = newControlAccess(opts.ControlGroup, s.gid)
	s.prefetch.init()
	s.models.init()
	s.hits.init()
	s.pending.init()
	s.quotas.init()
	s.listings.init()
	s.pins.init()
	s.reprKinds.init()
	s.reprCache = newReprCache(opts.ReprCache)
	return s
}

// fail turns err into an errno and logs the refused request in one line:
// a warning for an expected refusal, an error for an unexpected one
// (which becomes EIO).
func (s *fsState) fail(op, path string, err error) syscall.Errno {
	errno, known := mapErr(err)
	if known {
		s.log.Warn("request refused", "op", op, "path", path, "errno", unix.ErrnoName(errno), "err", err)
	} else {
		s.log.Error("unexpected error", "op", op, "path", path, "errno", unix.ErrnoName(errno), "err", err)
	}
	return errno
}

// debugFail is fail for requests that tools send as probes (a lookup of
// a name that cannot exist): one line at debug level.
func (s *fsState) debugFail(op, path string, err error) syscall.Errno {
	errno := toErrno(err)
	s.log.Debug("request refused", "op", op, "path", path, "errno", unix.ErrnoName(errno), "err", err)
	return errno
}

// dirAttr fills the attributes of a directory. Directories are virtual
// and occupy no blocks, so `du -s` of a model is exactly the sum of its
// files' st_blocks.
func (s *fsState) dirAttr(a *fuse.Attr, nlink uint32) {
	a.Mode = syscall.S_IFDIR | 0o755
	a.Nlink = nlink
	a.Size = 4096
	a.Blocks = 0
	a.Blksize = 4096
	a.Owner = fuse.Owner{Uid: s.uid, Gid: s.gid}
	a.SetTimes(&s.mounted, &s.mounted, &s.mounted)
}

// fileAttr fills the attributes of a regular file: st_blocks counts
// 512-byte units, rounded up, so du shows the exact size.
func (s *fsState) fileAttr(a *fuse.Attr, size int64, mtime time.Time, perm uint32) {
	a.Mode = syscall.S_IFREG | perm
	a.Nlink = 1
	a.Size = uint64(size)
	a.Blocks = uint64((size + 511) / 512)
	a.Blksize = 4096
	a.Owner = fuse.Owner{Uid: s.uid, Gid: s.gid}
	a.SetTimes(&mtime, &mtime, &mtime)
}

// hitsPruneAt is the size of the hit table past which the counts of keys
// no tier holds any more (evicted, removed elsewhere) are dropped.
const hitsPruneAt = 1 << 20

// hitTable counts opens for reading per key (the hits xattr).
type hitTable struct {
	mu      sync.Mutex
	n       map[tiers.Key]uint64
	limit   int         // prune when n grows past it
	pruning atomic.Bool // a prune runs
}

func (h *hitTable) init() {
	h.n = make(map[tiers.Key]uint64)
	h.limit = hitsPruneAt
}

// hit counts an open of k for reading.
func (s *fsState) hit(k tiers.Key) {
	h := &s.hits
	h.mu.Lock()
	h.n[k]++
	full := len(h.n) > h.limit
	h.mu.Unlock()
	if full && h.pruning.CompareAndSwap(false, true) {
		go s.pruneHits()
	}
}

// pruneHits drops the counts of keys no tier holds.
func (s *fsState) pruneHits() {
	h := &s.hits
	defer h.pruning.Store(false)
	h.mu.Lock()
	keys := make([]tiers.Key, 0, len(h.n))
	for k := range h.n {
		keys = append(keys, k)
	}
	h.mu.Unlock()
	var gone []tiers.Key
	for _, k := range keys {
		if !s.stack.Has(k) {
			gone = append(gone, k)
		}
	}
	h.mu.Lock()
	for _, k := range gone {
		delete(h.n, k)
	}
	h.limit = max(hitsPruneAt, 2*len(h.n))
	h.mu.Unlock()
}

func (h *hitTable) get(k tiers.Key) uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n[k]
}

// forget drops the counts of k, or of a whole model when k.Model is set
// and all is true.
func (h *hitTable) forget(k tiers.Key, all bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !all {
		delete(h.n, k)
		return
	}
	for key := range h.n {
		if key.Model == k.Model {
			delete(h.n, key)
		}
	}
}

// pendingSet counts the files being written per key, so a lookup of a
// name being written answers ENOENT without a negative cache entry: the
// name appears as soon as close publishes it. The epochs (256 buckets by
// id) move whenever a write of a key in the bucket ends, so a lookup that
// missed while a write ended also leaves nothing cached.
type pendingSet struct {
	mu     sync.Mutex
	n      map[tiers.Key]int
	epochs [256]uint64
}

func (p *pendingSet) init() { p.n = make(map[tiers.Key]int) }

func (p *pendingSet) epoch(k tiers.Key) uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.epochs[k.ID[15]]
}

func (p *pendingSet) add(k tiers.Key) {
	p.mu.Lock()
	p.n[k]++
	p.mu.Unlock()
}

func (p *pendingSet) done(k tiers.Key) {
	p.mu.Lock()
	if p.n[k]--; p.n[k] <= 0 {
		delete(p.n, k)
	}
	p.epochs[k.ID[15]]++
	p.mu.Unlock()
}

func (p *pendingSet) has(k tiers.Key) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n[k] > 0
}
