package dir

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/tiers/index"
	"github.com/ucmfs/ucmfs/tiers/rootfs"
	"github.com/ucmfs/ucmfs/tiers/tier"
	"golang.org/x/sys/unix"
)

// Config configures a Tier. Zero fields take the defaults of the
// tier's kind:
//
//	kind   DirectIO  SyncOnCommit  OpTimeout  High  Low   Shared
//	nvme   on        off           10s        0.90  0.80  no
//	nfs    off       on            60s        0.90  0.80  yes
//	ds3fs  off       on            120s       0.90  0.80  yes
//
// Why:
//   - DirectIO is on for nvme: a block written back is still in the memory
//     tier, so a second copy in the page cache only competes with the
//     memory tier for RAM, and copying 2 MiB into fresh page-cache pages
//     costs the CPU that the writers need (on a 2-vCPU VM it was 62% of
//     the daemon's time under a sustained write, and the write-back ran
//     at 1.2 GB/s where the disk takes 1.3 GB/s with O_DIRECT). A block
//     read from the tier after its eviction comes from the disk once, then
//     from the page cache (passthrough reads through it). On NFS it turns
//     every write into a synchronous RPC and defeats the client cache;
//     through the 3FS FUSE client it gains nothing over 3FS's own I/O
//     path, so it is used there only when asked.
//   - SyncOnCommit is on for the shared kinds: a client may send the
//     rename before the data (NFS writes back asynchronously; 3FS makes a
//     file's length visible to other clients only on fsync or close), and
//     another host must never open a published name and read a short
//     file. On nvme the local page cache keeps a renamed file whole for
//     every reader and across a kill -9, so fsync is left to the callers
//     that need durability (CommitOptions.Sync, Sync).
//   - OpTimeout: a local disk that does not answer in 10s is broken; an NFS
//     server may take tens of seconds to fail over or leave its grace
//     period; a large 3FS cluster may pause longer while it migrates
//     chains. Past the timeout the tier is Down and fails fast. On NFS and
//     3FS, where stalls happen, every operation runs in its own goroutine
//     so its caller gets ErrStalled at the timeout; on nvme operations run
//     inline (cheaper) and a stalled one holds its caller until the disk
//     answers, while the tier goes Down for the others.
//   - Watermarks: eviction starts above 90% and frees down to 80%, leaving
//     room for bursts of write-back between passes.
//   - Shared: NFS and 3FS directories may be shared by several daemons, so
//     the directory is not locked for one daemon, nothing is scanned before
//     the tier serves, its index is revalidated per shard directory and a
//     key missing from it is looked up on disk (shared.go), eviction goes
//     by mtime and spares recent files, and only stale temp files are
//     removed (shared_temps.go).
type Config struct {
	// Kind is "nvme", "nfs" or "ds3fs".
	Kind string
	// Dir is the tier's root directory; it is created if missing.
	Dir string
	// Capacity is the most bytes of files the tier holds. 0 means the
	// bytes it holds at start plus the free space of its filesystem, so a
	// tier on a shared disk never plans to fill more than what is free.
	Capacity int64
	// MaxFiles is the most files the tier holds (0: DefaultMaxFiles,
	// negative: no bound): see DefaultMaxFiles.
	MaxFiles int64
	// HighWatermark and LowWatermark are fractions of Capacity: OverHigh
	// reports use above High; eviction frees down to Low.
	HighWatermark, LowWatermark float64
	// DirectIO writes Writer.Write's bytes with O_DIRECT (nil: per kind).
	DirectIO *bool
	// SyncOnCommit fsyncs every commit, as if CommitOptions.Sync were set
	// (nil: per kind).
	SyncOnCommit *bool
	// Shared says other daemons may use the directory too (nil: per kind).
	Shared *bool
	// OpTimeout bounds every filesystem operation (0: per kind).
	OpTimeout time.Duration
	// Revalidate is how long a shared tier trusts its index of a shard
	// directory and its listing of models before it checks the directory
	// again (0: DefaultRevalidate; negative: never, the index is trusted
	// as on an unshared tier). See shared.go.
	Revalidate time.Duration
	// Rescan is how often a shared tier checks every shard it knows again
	// in the background (0: DefaultRescan): the longest before a block
	// another host published or removed, in a shard no lookup asks about,
	// enters or leaves the index (and its events go out: package events).
	Rescan time.Duration
	// ProbeInterval is how often the tier asks its directory whether it
	// answers (a statfs of its root), which takes a Down tier back up
	// (0: DefaultProbeInterval). See Health.
	ProbeInterval time.Duration
	// KeepRecent is the age under which a shared tier never evicts a file:
	// its mtime is moved on use by every daemon, so a block another host
	// is using is not deleted under it (0: DefaultKeepRecent).
	KeepRecent time.Duration
	// Logger receives warnings (default slog.Default()).
	Logger *slog.Logger
	// OpenFS opens the filesystem beneath the tier's root (nil:
	// rootfs.Open, the real one). Tests put a crash-simulating or
	// fault-injecting one here (package tiers/rootfs/crashfs).
	OpenFS func(dir string, perm uint32) (rootfs.FS, error)
}

// kindDefaults is one row of the table in Config's doc comment.
type kindDefaults struct {
	directIO, syncOnCommit, shared bool
	detach                         bool // operations in their own goroutine
	timeout                        time.Duration
	high, low                      float64
}

var dirKinds = map[string]kindDefaults{
	"nvme":  {directIO: true, syncOnCommit: false, shared: false, detach: false, timeout: 10 * time.Second, high: 0.90, low: 0.80},
	"nfs":   {directIO: false, syncOnCommit: true, shared: true, detach: true, timeout: 60 * time.Second, high: 0.90, low: 0.80},
	"ds3fs": {directIO: false, syncOnCommit: true, shared: true, detach: true, timeout: 120 * time.Second, high: 0.90, low: 0.80},
}

// Tier is a directory tier: files in the <model>/<hh>/<id>.bin layout
// under a root directory on local NVMe, NFS or DS3FS. It is persistent: at
// start it rebuilds its index from the directory listing.
//
// Every filesystem operation runs under the kind's timeout (see health).
// Lock order: a writer's mutex, then index.mu (a leaf); DirCache.mu is a
// leaf too. No lock is held while waiting for the filesystem.
type Tier struct {
	kind        string
	root        string
	log         *slog.Logger
	idx         *index.Index
	pub         publisher
	dirs        tier.DirCache
	flat        flatDirs // directories with no subdirectory here (flat.go)
	subdirLinks bool     // a directory's link count is 2 plus its subdirectories (flat.go)
	high        float64
	low         float64
	timeout     time.Duration
	probeEvery  time.Duration // the period of the health probe (Config.ProbeInterval)
	syncAll     bool
	share       dirSharing    // private or shared: who else uses the directory (sharing.go)
	fs          rootfs.FS     // the root, held: every path operation resolves beneath it, through no link (package rootfs)
	refusedLog  tier.LogEvery // the log line of a non-file where a file should be, at most once a minute
	linkLog     tier.LogEvery // the log line of a link met in the tier (linkMet)
	sumLog      tier.LogEvery // the log line of a sum file not written (sums.go)

	direct     atomic.Bool // O_DIRECT writes enabled (cleared if unsupported)
	directWarn sync.Once
	noXattr    atomic.Bool // the filesystem refused the CRC xattr
	sums       atomic.Bool // CRCs are kept in sum files too (sums.go)

	space     fsSpace // the filesystem's free space (space.go)
	health    healthState
	inline    bool    // operations run on the caller's goroutine (see do)
	watch     opWatch // inline operations in flight
	probeBusy atomic.Bool
	probes    atomic.Int64 // probes done (Probes)
	stuck     atomic.Int32 // operations abandoned after the timeout, still blocked

	trash dirTrash      // removed files the reaper unlinks (trash.go)
	sup   supersededSet // files replaced by versions not committed here yet (supersede.go)

	// rootLost: the directory the tier holds went (root.go);
	// onRootLost, the stack's, is told the keys that went with it and
	// returns how many memory keeps; reattachLog paces the line of a
	// directory back at the path but not taken.
	rootLost    atomic.Bool
	onRootLost  atomic.Pointer[func([]format.Key) int]
	reattachLog tier.LogEvery

	closed atomic.Bool
	// lateMu is held for reading by the clean-ups of Writers the tier
	// gave up on (whileOpen), for writing by Close before it closes the
	// directory: none runs after.
	lateMu sync.RWMutex
	lates  sync.WaitGroup // those clean-ups started in the background
	stop   chan struct{}
	wg     sync.WaitGroup
}

var _ tier.Lower = (*Tier)(nil)

// New opens (creating it if needed) the tier directory, rebuilds
// the index from its listing, and starts the health probe.
func New(cfg Config) (*Tier, error) {
	def, ok := dirKinds[cfg.Kind]
	if !ok {
		return nil, fmt.Errorf("directory tier: unknown kind %q (want nvme, nfs or ds3fs)", cfg.Kind)
	}
	if cfg.Dir == "" {
		return nil, fmt.Errorf("%s tier: no directory", cfg.Kind)
	}
	root, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("%s tier: %w", cfg.Kind, err)
	}
	t := &Tier{
		kind: cfg.Kind, root: root, log: cfg.Logger,
		high: orDefault(cfg.HighWatermark, def.high), low: orDefault(cfg.LowWatermark, def.low),
		timeout: def.timeout, syncAll: boolOr(cfg.SyncOnCommit, def.syncOnCommit),
		stop: make(chan struct{}),
	}
	if boolOr(cfg.Shared, def.shared) {
		t.share = newSharedDir(t, cfg)
	} else {
		t.share = &privateDir{Tier: t}
	}
	if cfg.OpTimeout > 0 {
		t.timeout = cfg.OpTimeout
	}
	t.probeEvery = cfg.ProbeInterval
	if t.probeEvery <= 0 {
		t.probeEvery = DefaultProbeInterval
	}
	if t.log == nil {
		t.log = slog.Default()
	}
	t.direct.Store(boolOr(cfg.DirectIO, def.directIO))
	if !(t.low > 0 && t.low <= t.high && t.high <= 1) {
		return nil, fmt.Errorf("%s tier: watermarks must satisfy 0 < low <= high <= 1, got low %v high %v", t.kind, t.low, t.high)
	}
	if cfg.Capacity < 0 {
		return nil, fmt.Errorf("%s tier: negative capacity %d", t.kind, cfg.Capacity)
	}
	t.idx = index.New(cfg.Capacity)
	t.idx.SetUnit(dirUnit)
	t.idx.SetMaxFiles(tier.MaxFiles(cfg.MaxFiles))
	// Made private when missing: the files of 0700 models are in it.
	open := cfg.OpenFS
	if open == nil {
		open = openRoot
	}
	if err := t.do("open", func() (err error) { t.fs, err = open(root, 0o700); return err }, nil); err != nil {
		return nil, fmt.Errorf("%s tier: %w", t.kind, err)
	}
	t.fs.SetOnLink(t.linkMet)
	if c, ok := t.fs.(interface{ Canonical() string }); ok && c.Canonical() != root {
		t.log.Info("tier directory reached through a link: the daemon holds the directory it leads to now, and takes no link put at the path later",
			"kind", t.kind, "dir", root, "directory", c.Canonical())
	}
	t.subdirLinks = countsSubdirLinks(t.fs.FD())
	var st unix.Stat_t
	if t.fs.Lstat(sumsDirName, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
		t.sums.Store(true) // an earlier run, or another host, kept sums here
	}
	if err := t.share.start(); err != nil {
		t.share.release(false)
		return nil, err
	}
	if cfg.Capacity == 0 {
		if err := t.setFreeCapacity(); err != nil {
			t.share.release(false)
			return nil, fmt.Errorf("%s tier: %w", t.kind, err)
		}
	}
	if !def.detach {
		t.startTrash()
	}
	// Start-up operations above ran detached, so a stalled directory
	// fails the start instead of hanging it.
	t.inline = !def.detach
	t.sweepSumTemps()
	t.wg.Add(1)
	go t.probeLoop()
	t.share.serve(cfg.Capacity == 0)
	return t, nil
}

// openRoot is the real filesystem under a tier: its root held, no link.
func openRoot(dir string, perm uint32) (rootfs.FS, error) {
	r, err := rootfs.Open(dir, os.FileMode(perm))
	if err != nil {
		return nil, err // not a nil *Root in a non-nil FS
	}
	return r, nil
}

func orDefault(v, def float64) float64 {
	if v == 0 {
		return def
	}
	return v
}

func boolOr(p *bool, def bool) bool {
	if p == nil {
		return def
	}
	return *p
}

// Name is the tier's kind.
func (t *Tier) Name() string { return t.kind }

// Kind is the tier's kind: "nvme", "nfs" or "ds3fs".
func (t *Tier) Kind() string { return t.kind }

// Dir is the tier's root directory.
func (t *Tier) Dir() string { return t.root }

// Persistent is true: files survive restarts.
func (t *Tier) Persistent() bool { return true }

// Root is the tier's root directory, held: the tier's files are reached
// beneath it, through no link.
func (t *Tier) Root() rootfs.FS { return t.fs }

// Usage reports capacity and use.
func (t *Tier) Usage() tier.Usage { return tier.Usage(t.idx.Usage()) }

// Scanned reports whether the index knows the whole directory: at once
// for a private tier, whose index is built at start; once its background
// scan is done for a shared one.
func (t *Tier) Scanned() bool { return t.share.scanned() }

// OverHigh reports whether use, in bytes or in files (MaxFiles), is
// above the high watermark. A shared tier is never over it before its
// background scan is done.
func (t *Tier) OverHigh() bool {
	if !t.Scanned() {
		return false
	}
	u := t.idx.Usage()
	return float64(u.Charged) > t.high*float64(u.Capacity) ||
		u.MaxFiles > 0 && float64(u.Files) > t.high*float64(u.MaxFiles)
}

// LowTarget is the use, in bytes, that eviction frees down to.
func (t *Tier) LowTarget() int64 {
	return int64(t.low * float64(t.idx.Usage().Capacity))
}

// OverLow reports whether use, in bytes or in files, is above the low
// watermark: eviction goes on.
func (t *Tier) OverLow() bool {
	u := t.idx.Usage()
	return u.Charged > t.LowTarget() ||
		u.MaxFiles > 0 && float64(u.Files) > t.low*float64(u.MaxFiles)
}

// Oldest returns up to n files, least recently used first.
func (t *Tier) Oldest(n int) []tier.Info { return tier.InfosOf(t.idx.Oldest(n)) }

// Touch marks key as just used (LRU). On a shared tier it also moves the
// file's mtime to now (at most once per touchEvery), the use every daemon
// sees and evicts by (shared_evict.go).
func (t *Tier) Touch(key format.Key) {
	t.idx.Touch(key)
	t.share.touched(key)
}

// List calls fn for the indexed files of model ("" for all).
func (t *Tier) List(model string, fn func(tier.Info) bool) {
	t.idx.Each(model, func(e *index.Entry) bool { return fn(tier.InfoOf(e)) })
}

// Models returns the models that have indexed files, sorted; a shared
// tier adds the model directories at its root (shared.go).
func (t *Tier) Models() []string {
	return t.share.models(t.idx.ModelNames())
}

// ModelUsage returns the number of indexed files and bytes of model.
func (t *Tier) ModelUsage(model string) (files, bytes int64) { return t.idx.ModelUsage(model) }

// Close stops the health probe and releases the directory; the files stay.
// Closing twice is harmless.
func (t *Tier) Close() error {
	if !t.closed.CompareAndSwap(false, true) {
		return nil
	}
	close(t.stop)
	t.wg.Wait()
	t.share.release(true) // the index snapshot is written from the index
	t.idx.Drain()
	t.lateMu.Lock() // the clean-ups under way end; later ones see closed
	t.lateMu.Unlock()
	t.fs.Close()
	return nil
}

// errClosed is the error of operations on a closed tier.
func (t *Tier) errClosed(op string) error {
	return fmt.Errorf("%s tier: %s: %w", t.kind, op, tier.ErrClosed)
}

// dirUnit is what a file takes of a directory tier's capacity at least,
// and the unit its size is rounded up to: a block of the tier's
// filesystem (4 KiB on ext4 and xfs), which an empty file's inode and
// directory entry cost too. Counting exact bytes let any number of tiny
// files fill a tier's filesystem, and the daemon's memory, while its
// capacity showed room.
const dirUnit = 4096
