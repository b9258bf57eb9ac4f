package tiers

// Stack invariants and lock order
//
//   - A block is "dirty" while the memory tier holds the only copy; the
//     memory tier evicts clean blocks only, so a dirty block is never dropped.
//   - Every change of where a key lives (publish, write-back commit, promote
//     commit, demotion, remove) happens under that key's stripe lock
//     (s.keyLock). Slow I/O (copying bytes) happens outside the lock into a
//     private temp file; only the commit (a rename) and the bookkeeping are
//     done under it, after re-checking the state.
//   - Lock order: key stripe lock, then a tier's internal lock. The stack
//     never holds two stripe locks at once, and s.mu (queue, waiters) is
//     never held while calling into a tier.
//   - ristretto is used for admission only: it never holds the only record
//     of a block; residency and capacity are tracked by the tiers' indexes.

import (
	"context"
	"errors"
	"hash/maphash"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dgraph-io/ristretto/v2"
	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/tiers/dir"
	"github.com/ucmfs/ucmfs/tiers/mem"
	"github.com/ucmfs/ucmfs/tiers/tier"
	"golang.org/x/sync/singleflight"
)

// StackConfig tunes the stack. Zero values take the defaults.
type StackConfig struct {
	// WriteBackWorkers is the size of the write-back pool (default 2).
	WriteBackWorkers int
	// WriteThrough makes Publish return only once the block is on the
	// first persistent tier (default: write-back in the background).
	WriteThrough bool
	// DirtyExpire is how long a published block may stay dirty (in memory
	// only) while the dirty bytes are under DirtyBackground: write-back of
	// younger blocks is deferred (move_dirty.go). Zero writes back at
	// once; the daemon's default is DefaultDirtyExpire.
	DirtyExpire time.Duration
	// DirtyBackground is the dirty bytes above which the write-back
	// workers write back, oldest first, without waiting for the expiry
	// (default: DefaultDirtyBackgroundPercent of the memory tier).
	DirtyBackground int64
	// DirtyLimit is the dirty bytes at which Publish waits for write-back
	// to bring them back under it (default: DefaultDirtyLimitPercent of the
	// memory tier). It is raised to DirtyBackground if below it.
	DirtyLimit int64
	// RoomWait is how long a writer waits for write-back to free memory
	// before it writes straight to a persistent tier (default 10s).
	RoomWait time.Duration
	// RetryDelay is the pause before a failed write-back is tried again
	// (default 500ms).
	RetryDelay time.Duration
	// Logger receives one line per notable event (default slog.Default()).
	Logger *slog.Logger
	// NoAdmission promotes every block read from a lower tier when memory
	// is full, evicting the least recently used, instead of only those the
	// TinyLFU filter has seen before (for comparison: a one-time scan then
	// evicts the hot set; BenchmarkScanResistance).
	NoAdmission bool
}

func (c *StackConfig) setDefaults() {
	if c.WriteBackWorkers <= 0 {
		c.WriteBackWorkers = 2
	}
	if c.RoomWait <= 0 {
		c.RoomWait = 10 * time.Second
	}
	if c.RetryDelay <= 0 {
		c.RetryDelay = 500 * time.Millisecond
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Stack is the memory tier over an ordered list of directory tiers.
type Stack struct {
	cfg  StackConfig
	log  *slog.Logger
	mem  *mem.Tier
	dirs []tier.Lower

	holderLists [][]string // BlockInfo.Holders by the tiers holding a file (makeHolderLists)

	locks [256]sync.Mutex
	seed  maphash.Seed

	flights singleflight.Group
	admit   *ristretto.Cache[uint64, struct{}] // keyed by admitKey

	mu       sync.Mutex
	queue    []dirtyRef          // keys waiting for write-back, oldest first
	queued   map[format.Key]bool // members of queue
	work     chan struct{}       // wakes a write-back worker
	room     chan struct{}       // closed and replaced whenever memory may have room
	verified map[format.Key]bool // lower-tier files whose CRC was checked this run
	staged   stagedSet           // files staged on disk, not yet published or discarded (stack_disk.go)
	closed   bool
	promo    promoteQueue // promotions decided by reads (move_promote.go)

	metas modelMetas                            // the models' settings records (model_meta.go)
	keep  atomic.Pointer[func(format.Key) bool] // files never dropped from the last tier (SetKeep)
	// keptWarned is when the last tier last logged that it drops kept
	// files (unix nanoseconds): once a minute at most.
	keptWarned atomic.Int64
	// dropLog lets the line of the last tier's drops out once a minute;
	// dropsLogged is the drops counter at the last line.
	dropLog     tier.LogEvery
	dropsLogged atomic.Int64

	stop chan struct{}
	wg   sync.WaitGroup

	pressure     atomic.Int32 // writers waiting for memory room (makeRoom)
	memFullState              // the last log line of MemFull (stack_memfull.go)

	stats counters

	replacing replaceWatch // the replacements running, for listings (stack_replacing.go)
	copies    treeCopies   // copies of Files that may make a directory RemoveDir removes (tree_copies.go)
	// shareMoves: the directories a move renamed on the shared tiers,
	// whose files' per-file move leaves those tiers alone (stack_dir_rename.go).
	shareMoves shareMoves
}

// MemConfig configures the memory tier (package tiers/mem).
type MemConfig = mem.Config

// HostRegistrar registers the memory tier's mappings with the GPU driver
// (mem.HostRegistrar).
type HostRegistrar = mem.HostRegistrar

// New builds the memory tier of mc and the directory tiers of dirs (in
// order, fastest first), and the stack over them, which owns them from
// then on (Stack.Close closes them). A tier config without a Logger gets
// cfg's. On failure New closes what it built; the error of a tier that
// could not be built is a *TierError naming it.
func New(cfg StackConfig, mc MemConfig, dirs ...dir.Config) (*Stack, error) {
	cfg.setDefaults()
	if mc.Logger == nil {
		mc.Logger = cfg.Logger
	}
	m, err := mem.New(mc)
	if err != nil {
		return nil, &TierError{ID: Memory, Err: err}
	}
	var ds []tier.Lower
	fail := func(err error) (*Stack, error) {
		for _, d := range ds {
			d.Close()
		}
		m.Close()
		return nil, err
	}
	for i, dc := range dirs {
		if dc.Logger == nil {
			dc.Logger = cfg.Logger
		}
		d, err := dir.New(dc)
		if err != nil {
			return fail(&TierError{ID: TierID(i + 1), Err: err})
		}
		ds = append(ds, d)
	}
	s, err := newStack(cfg, m, ds)
	if err != nil {
		return fail(err)
	}
	return s, nil
}

// TierError is the error of a tier New could not build.
type TierError struct {
	ID  TierID // Memory, or 1 + the index of the DirConfig
	Err error
}

// Error is the tier's error message.
func (e *TierError) Error() string { return e.Err.Error() }

// Unwrap returns the tier's error.
func (e *TierError) Unwrap() error { return e.Err }

// newStack is New once the tiers are built.
func newStack(cfg StackConfig, mt *mem.Tier, dirs []tier.Lower) (*Stack, error) {
	cfg.setDefaults()
	if mt == nil {
		return nil, errors.New("tiers: a stack needs a memory tier")
	}
	slots := mt.Usage().Capacity / (64 << 10)
	if slots < 64 {
		slots = 64
	}
	adm, err := ristretto.NewCache(&ristretto.Config[uint64, struct{}]{
		NumCounters: 10 * slots,
		MaxCost:     slots,
		BufferItems: 64,
	})
	if err != nil {
		return nil, err
	}
	s := &Stack{
		cfg:      cfg,
		log:      cfg.Logger,
		mem:      mt,
		dirs:     dirs,
		seed:     maphash.MakeSeed(),
		admit:    adm,
		queued:   make(map[format.Key]bool),
		work:     make(chan struct{}, 1),
		room:     make(chan struct{}),
		verified: make(map[format.Key]bool),
		promo:    newPromoteQueue(),
		stop:     make(chan struct{}),
	}
	s.holderLists = makeHolderLists(mt.Name(), dirs)
	s.cfg.setDirtyDefaults(mt.Usage().Capacity, dirs)
	for _, d := range dirs {
		d.OnRootLost(s.keepLost)
	}
	s.watchShared()
	s.loadOwed()
	for i := 0; i < cfg.WriteBackWorkers; i++ {
		s.wg.Add(1)
		go s.writeBackLoop()
	}
	s.wg.Add(1)
	go s.demoteLoop()
	if len(dirs) > 0 {
		s.wg.Add(1)
		go s.promoteLoop()
	}
	return s, nil
}

// Persistent reports whether the stack has a persistent tier at all.
func (s *Stack) Persistent() bool { return len(s.dirs) > 0 }

// keyLock returns the stripe lock of key.
func (s *Stack) keyLock(k format.Key) *sync.Mutex {
	var h maphash.Hash
	h.SetSeed(s.seed)
	h.WriteString(k.Model)
	h.Write(k.ID[:])
	h.WriteByte(byte(k.Kind))
	return &s.locks[h.Sum64()%uint64(len(s.locks))]
}

// signalRoom wakes writers waiting for memory room.
func (s *Stack) signalRoom() {
	s.mu.Lock()
	close(s.room)
	s.room = make(chan struct{})
	s.mu.Unlock()
}

// roomChanged returns a channel closed at the next signalRoom.
func (s *Stack) roomChanged() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.room
}

// Close stops taking writes, writes back what is dirty (until ctx ends),
// stops the workers and closes every tier. Blocks still dirty when ctx
// ends are lost with the memory tier; Close reports how many.
func (s *Stack) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	s.closed = true
	s.mu.Unlock()
	flushErr := s.FlushAll(ctx, "")
	close(s.stop)
	s.wg.Wait()
	s.admit.Close()
	for _, w := range s.staged.drain() {
		w.Abort() // its writer is gone with the mount: no temp file stays in the tier
	}
	errs := []error{flushErr}
	for _, d := range s.dirs {
		errs = append(errs, d.Close())
	}
	errs = append(errs, s.mem.Close())
	return errors.Join(errs...)
}

func (s *Stack) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// SetKeep sets the rule of the files the last directory tier never drops
// when it makes room (the store's: an engine's own small files in a
// files model, store.KeptFile). They still move down between tiers.
func (s *Stack) SetKeep(keep func(format.Key) bool) { s.keep.Store(&keep) }
