package store

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ucmfs/ucmfs/events"
	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/layout/registry"
	"github.com/ucmfs/ucmfs/tiers"
	"golang.org/x/sync/semaphore"
	"golang.org/x/sync/singleflight"
)

// Options configure a Store. Zero values take the defaults.
type Options struct {
	// MaxFileSize is the largest file a write may make (default 1 GiB).
	MaxFileSize int64
	// Logger gets the store's warnings (default slog.Default()).
	Logger *slog.Logger
	// Repr is the kind of sidecar derived for a block that has none
	// stored, for every model without its own user.ucm.repr_kind (the
	// zero value: kind 0, mean).
	Repr ReprSetting
	// ReprCache is how many bytes of sidecar files .ucm/topk keeps in
	// memory across requests (default 256 MiB; negative: none).
	ReprCache int64
	// MaxPending bounds the bytes of the files being written, not yet
	// published (pending_budget.go); 0: the memory tier's capacity,
	// negative: no bound. MaxPendingPerUser is one user's share (0: half of
	// MaxPending).
	MaxPending        int64
	MaxPendingPerUser int64
	// MaxModelsPerUser bounds the models one user other than root owns
	// (users.go); 0 takes DefaultMaxModelsPerUser, negative: no bound.
	// MaxBytesPerUser bounds the bytes of one user's models together; 0:
	// no bound.
	MaxModelsPerUser int
	MaxBytesPerUser  int64
	// MaxDirs bounds the directories of files models (dir_tree.go); 0
	// takes DefaultMaxDirs, negative: no bound. MaxDirsPerUser is what one
	// user's mkdirs make of them (0: half of MaxDirs, negative: no bound).
	MaxDirs        int
	MaxDirsPerUser int
	// StagingTTL is how long a staging file may wait for its rename with
	// no descriptor open before it is discarded (writes_expire.go); 0
	// takes DefaultStagingTTL, negative: never.
	StagingTTL time.Duration
	// Layout is the layout of every model made from then on (mkdir at the
	// mount root): a name of layout/registry ("" is the default one).
	Layout string
	// EventsWindow is how many events .ucm/events and the KV-event
	// publisher can replay (events.Journal); 0: events.DefaultWindow.
	EventsWindow int
}

// Defaults of Options.
const (
	DefaultMaxFileSize = 1 << 30
	DefaultReprCache   = 256 << 20
)

func (o *Options) setDefaults() {
	if o.MaxFileSize <= 0 {
		o.MaxFileSize = DefaultMaxFileSize
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.ReprCache == 0 {
		o.ReprCache = DefaultReprCache
	}
}

// Store is the block store of one mount, above the tiers.Stack and below
// any front end (the FUSE adapter, the control protocol): the registry of
// models, the publish rules, sidecars, pins of GPU loads, the promotion
// pool and the counters. It returns Go errors only.
//
// Lock order: every mutex of a Store is a leaf (models.mu, hits.mu,
// pending.mu, budget.mu, quotas.mu, settings.mu, reprCache.mu,
// settings.mu): none is held while another is taken or while the stack is
// called. The exceptions are settings.write (settings.go) and pins.mu,
// held while the memory tier's pin flag of a key changes, so that the flag
// and the table agree (pins.go); it is taken before the stack's locks and
// never under another mutex of this package.
type Store struct {
	stack *tiers.Stack
	opts  Options
	log   *slog.Logger

	models   modelSet
	hits     hitTable
	pending  pendingSet
	budget   pendingBudget // bytes of the files being written
	quotas   quotaTable
	users    userUse       // bytes of each user's models (users.go)
	stop     chan struct{} // closed by Close: background loops end
	stopOnce sync.Once
	tierIO   []tierIO   // bytes clients moved, per tier (0 memory, then dirs)
	prefetch prefetcher // the promotion pool
	pins     loadPins   // blocks pinned by GPU loads in flight

	settings  settingsTable       // per-model persisted settings (settings.go)
	leftMoves leftMoves           // directory move records left on the tiers (files_move_left.go)
	rekeys    rekeyTable          // key_pattern changes being announced (key_pattern_events.go)
	derives   singleflight.Group  // sidecar derivations in flight, by path
	deriveMem *semaphore.Weighted // bytes derivations hold (repr_derive.go)
	reprCache *reprCache          // sidecar files .ucm/topk read or derived

	// Counters are the control plane's request counters; the control
	// package adds to them, Snapshot reads them.
	Counters Counters
	// Latency receives the time of each control request by kind; its
	// observers default to none (package metrics installs histograms).
	Latency Latency

	writes   writeTable    // files being written, by name (writes_table.go)
	trees    treeSet       // the directories of files models (files_dirs.go)
	dirPins  dirPinTable   // the pinned directories of files models (dir_pins.go)
	gens     genTable      // the generations of replaced Files (gens.go)
	writeSeq atomic.Uint64 // numbers of files being written
	parked   atomic.Int64  // staging files parked without a descriptor (writes.go)

	events      *events.Journal                  // what the tiers hold, as it changes (events.go)
	published   atomic.Pointer[func(format.Key)] // the front end's hook (OnPublish)
	listingHook atomic.Pointer[func(format.Key)] // the front end's hook (OnListingChange)
	stopped     atomic.Bool                      // Stop was called
	device      atomic.Pointer[DeviceStats]      // the snapshot's GPU part (ReportDevice)
}

// New returns the store over st and registers the models its tiers hold.
func New(st *tiers.Stack, opts Options) (*Store, error) {
	opts.setDefaults()
	if err := opts.Repr.validate(); err != nil {
		return nil, err
	}
	if opts.Layout != "" {
		if _, err := ParseLayout(opts.Layout); err != nil {
			return nil, err
		}
	}
	s := &Store{
		stack:  st,
		opts:   opts,
		log:    opts.Logger,
		tierIO: make([]tierIO, len(st.Stats().Tiers)),
	}
	s.Latency.setDefaults()
	s.prefetch.init()
	s.models.init()
	s.hits.init()
	s.pending.init()
	s.quotas.init()
	s.pins.init()
	s.settings.init()
	s.reprCache = newReprCache(opts.ReprCache)
	s.deriveMem = semaphore.NewWeighted(deriveMemory(opts.MaxFileSize))
	s.budget.max, s.budget.perUser = opts.MaxPending, opts.MaxPendingPerUser
	s.trees.setBounds(opts.MaxDirs, opts.MaxDirsPerUser)
	if s.opts.MaxModelsPerUser == 0 {
		s.opts.MaxModelsPerUser = DefaultMaxModelsPerUser
	}
	s.stop = make(chan struct{})
	if s.opts.StagingTTL == 0 {
		s.opts.StagingTTL = DefaultStagingTTL
	}
	if s.opts.StagingTTL > 0 {
		go s.expireLoop(s.opts.StagingTTL, s.stop)
	}
	go s.refreshLoop(s.stop)
	if s.budget.max == 0 {
		s.budget.max = st.Tiers()[tiers.Memory].Usage.Capacity
	}
	if s.budget.perUser == 0 {
		s.budget.perUser = s.budget.max / 2
	}
	st.SetPinRule(s.dirPinned)
	s.seedModels()
	s.finishDirMoves()
	st.SetKeep(func(k format.Key) bool { return registry.Of(k).Kept(k) })
	s.startEvents()
	return s, nil
}

// MaxFileSize is the largest file a write may make.
func (s *Store) MaxFileSize() int64 { return s.opts.MaxFileSize }

// Logger is the store's logger.
func (s *Store) Logger() *slog.Logger { return s.log }

// Stop makes every later write refused with ErrStopped: the daemon is
// shutting down. Writes already under way still publish.
func (s *Store) Stop() { s.stopped.Store(true) }

// Stopped reports whether Stop was called.
func (s *Store) Stopped() bool { return s.stopped.Load() }

// OnPublish sets the hook called with the key of a block published behind
// the front end's back (a GPU dump), so it can drop a cached miss.
func (s *Store) OnPublish(fn func(format.Key)) { s.published.Store(&fn) }

// NotifyPublished calls the OnPublish hook for k.
func (s *Store) NotifyPublished(k format.Key) {
	if fn := s.published.Load(); fn != nil {
		(*fn)(k)
	}
}

// Close stops the promotion pool: queued promotions are dropped, running
// ones finish; a directory move's record left on a tier is dropped if
// the tiers take the write now (files_move_left.go). The stack is the
// caller's to close.
func (s *Store) Close() {
	s.stopOnce.Do(func() { close(s.stop) })
	s.stopPrefetch()
	if err := s.retryLeftMoves(); err != nil {
		s.log.Warn("directory move record left at the close: the next start finishes the move", "err", err)
	}
}
