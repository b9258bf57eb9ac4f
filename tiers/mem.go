package tiers

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/ucmfs/ucmfs/hashdir"
	"golang.org/x/sys/unix"
)

// MemConfig configures a MemTier.
type MemConfig struct {
	// Capacity is the most bytes of files the tier holds (required, > 0).
	Capacity int64
	// Dir is the RAM-backed parent of the tier's private directory
	// (default /dev/shm).
	Dir string
	// AllowDisk lets Dir be on a filesystem other than tmpfs or ramfs.
	// Only tests should set it.
	AllowDisk bool
	// MaxMappings is the most files kept mapped (and locked) at once
	// (0: DefaultMaxMappings; negative: map nothing).
	MaxMappings int
	// Lock says when mapped pages are also locked in RAM (mlock): LockAuto
	// ("auto", the default: while swap is active), LockAlways or
	// LockNever. Locking is done after commit, off the writer's close,
	// unless Host is set.
	Lock string
	// Logger receives warnings (default slog.Default()).
	Logger *slog.Logger
	// Host, when set, registers every mapping the tier locks (for GPU
	// DMA) and unregisters it before unmapping; nil registers nothing.
	Host HostRegistrar
	// Private chooses where the files live: PrivateAuto ("" or "auto",
	// the default) mounts a tmpfs of the tier's own with transparent huge
	// pages when the process may mount, falling back to a directory under
	// Dir; PrivateOff always uses the directory under Dir.
	Private string
}

// Values of MemConfig.Private.
const (
	PrivateAuto = "auto"
	PrivateOff  = "off"
)

// MemTier is the memory tier: each block is a file in a private directory
// on tmpfs, mapped (and locked in RAM, see MemConfig.Lock) while the
// mapping budget allows. Files do
// not survive the daemon. New files are dirty until the stack has written
// them back (SetDirty); dirty and pinned files are never evicted.
//
// Lock order: MemTier.life, then a writer's mutex, then index.mu (a leaf).
// life is held shared by every operation that touches the directory and
// exclusively by Close, which removes it.
type MemTier struct {
	root  string
	log   *slog.Logger
	idx   *index
	pages *pageLocker
	lockq *lockQueue // nil unless pages are locked after commit
	pub   publisher
	dirs  dirCache

	life   sync.RWMutex
	closed bool     // under life
	lockf  *os.File // the held lock file, or the root of the private tmpfs
	// private: root is a detached tmpfs of the tier's own (privateTmpfs).
	private bool
}

var _ Tier = (*MemTier)(nil)

// NewMemTier creates the tier's private directory under cfg.Dir, after
// removing the directories left there by dead daemons.
func NewMemTier(cfg MemConfig) (*MemTier, error) {
	if cfg.Capacity <= 0 {
		return nil, fmt.Errorf("memory tier: capacity must be > 0, got %d", cfg.Capacity)
	}
	if cfg.Dir == "" {
		cfg.Dir = "/dev/shm"
	}
	if cfg.MaxMappings == 0 {
		cfg.MaxMappings = DefaultMaxMappings
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	if cfg.Private != "" && cfg.Private != PrivateAuto && cfg.Private != PrivateOff {
		return nil, fmt.Errorf("memory tier: private must be %q or %q, got %q", PrivateAuto, PrivateOff, cfg.Private)
	}
	mlock, why, err := resolveLock(cfg.Lock)
	if err != nil {
		return nil, err
	}
	var root string
	var lockf *os.File
	if cfg.Private != PrivateOff {
		root, lockf, err = privateTmpfs(cfg.Dir)
		if err != nil {
			log.Info("memory tier: no private tmpfs, using a directory instead", "dir", cfg.Dir, "reason", err)
		} else {
			log.Info("memory tier: private tmpfs with transparent huge pages (huge=within_size)")
		}
	}
	if lockf == nil {
		if !cfg.AllowDisk {
			if err := checkRAM(cfg.Dir); err != nil {
				return nil, err
			}
		}
		if root, lockf, err = makePrivateDir(cfg.Dir); err != nil {
			return nil, err
		}
		cleanStale(cfg.Dir, root, log)
	}
	var st unix.Statfs_t
	if unix.Statfs(root, &st) == nil {
		if free := int64(st.Bavail) * st.Bsize; free < cfg.Capacity {
			log.Warn("memory tier: capacity exceeds the free space of its filesystem",
				"dir", cfg.Dir, "capacity", cfg.Capacity, "free", free)
		}
	}
	if why != "" {
		log.Info("memory tier: " + why)
	}
	t := &MemTier{
		root:    root,
		private: isProcFd(root),
		log:     log,
		idx:     newIndex(cfg.Capacity),
		pages:   newPageLocker(cfg.MaxMappings, mlock, log, cfg.Host),
		lockf:   lockf,
	}
	if t.pages.deferred() {
		t.lockq = newLockQueue()
		go t.lockLoop(t.lockq)
	}
	return t, nil
}

// Name is "mem".
func (t *MemTier) Name() string { return "mem" }

// Persistent is false: the files go with the daemon.
func (t *MemTier) Persistent() bool { return false }

// Dir is the tier's private directory.
func (t *MemTier) Dir() string { return t.root }

func (t *MemTier) path(key Key) string { return filepath.Join(t.root, key.Path()) }

// enter takes the shared life lock; it fails once the tier is closed.
func (t *MemTier) enter() error {
	t.life.RLock()
	if t.closed {
		t.life.RUnlock()
		return fmt.Errorf("memory tier: %w", ErrClosed)
	}
	return nil
}

// Create starts a file for key in the tier's staging area.
func (t *MemTier) Create(key Key) (Writer, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	if err := t.enter(); err != nil {
		return nil, err
	}
	defer t.life.RUnlock()
	for {
		tmp := filepath.Join(t.root, tmpPrefix+randomSuffix())
		f, err := openFile(tmp, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL, 0o444)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return nil, osErr("memory tier: create", err)
		}
		return &memWriter{t: t, key: key, tmp: tmp, f: f}, nil
	}
}

// Open opens a published file and marks it used.
func (t *MemTier) Open(key Key) (*os.File, error) {
	if err := t.enter(); err != nil {
		return nil, err
	}
	defer t.life.RUnlock()
	if !t.idx.touch(key) {
		return nil, fmt.Errorf("memory tier: %s: %w", key, ErrNotFound)
	}
	f, err := openFile(t.path(key), unix.O_RDONLY, 0)
	if err != nil {
		return nil, notFound("memory tier: open", err)
	}
	return f, nil
}

// openHit is Open for the stack's read path: it reports a miss as false
// (no error built) and returns the file's size from the index (no fstat).
func (t *MemTier) openHit(key Key) (*os.File, int64, bool) {
	if t.enter() != nil {
		return nil, 0, false
	}
	defer t.life.RUnlock()
	size, ok := t.idx.touchSize(key)
	if !ok {
		return nil, 0, false
	}
	f, err := openFile(t.path(key), unix.O_RDONLY, 0)
	if err != nil {
		return nil, 0, false
	}
	return f, size, true
}

// Stat describes a published file.
func (t *MemTier) Stat(key Key) (Info, error) {
	info, _, ok := t.idx.get(key)
	if !ok {
		return Info{}, fmt.Errorf("memory tier: %s: %w", key, ErrNotFound)
	}
	return info, nil
}

// Remove deletes a published file, pinned or dirty alike. Its mapping is
// unmapped: a caller using Mapping must pin the key and not remove it.
func (t *MemTier) Remove(key Key) error {
	if err := t.enter(); err != nil {
		return err
	}
	defer t.life.RUnlock()
	e, ok := t.idx.remove(key)
	if !ok {
		return fmt.Errorf("memory tier: %s: %w", key, ErrNotFound)
	}
	return t.drop(e)
}

// drop releases a removed entry: unmaps it and unlinks its file.
func (t *MemTier) drop(e *entry) error {
	t.pages.unlock(e.mapping())
	e.setMapping(nil)
	if err := os.Remove(t.path(e.key())); err != nil && !errors.Is(err, os.ErrNotExist) {
		return osErr("memory tier: remove", err)
	}
	return nil
}

// List calls fn for the published files of model ("" for all).
func (t *MemTier) List(model string, fn func(Info) bool) { t.idx.each(model, fn) }

// Models returns the models that have files in the tier, sorted.
func (t *MemTier) Models() []string { return t.idx.modelNames() }

// ModelUsage returns the number of files and bytes of model in the tier.
func (t *MemTier) ModelUsage(model string) (files, bytes int64) { return t.idx.modelUsage(model) }

// RemoveModel removes every file of model, dirty and pinned ones included.
func (t *MemTier) RemoveModel(model string) error {
	if err := hashdir.ValidateModel(model); err != nil {
		return err
	}
	if err := t.enter(); err != nil {
		return err
	}
	defer t.life.RUnlock()
	for _, e := range t.idx.removeModel(model) {
		t.pages.unlock(e.mapping())
		e.setMapping(nil)
	}
	t.dirs.forget(model)
	if err := os.RemoveAll(filepath.Join(t.root, model)); err != nil {
		return osErr("memory tier: remove model", err)
	}
	return nil
}

// Usage reports capacity and use.
func (t *MemTier) Usage() Usage { return t.idx.usage() }

// Room is the capacity left: Capacity minus Used minus bytes of commits in
// flight.
func (t *MemTier) Room() int64 { return t.idx.room() }

// Touch marks key as just used (LRU).
func (t *MemTier) Touch(key Key) { t.idx.touch(key) }

// SetDirty marks key dirty (not yet on a persistent tier) or clean.
func (t *MemTier) SetDirty(key Key, dirty bool) error {
	if !t.idx.setFlags(key, func(e *entry) { e.set(flagDirty, dirty) }) {
		return fmt.Errorf("memory tier: %s: %w", key, ErrNotFound)
	}
	return nil
}

// SetCRC records crc as the payload CRC-32C of key when the tier has none
// for it (a block published without a CRC in its header gets one from
// the first copy that reads it). A CRC already known is kept.
func (t *MemTier) SetCRC(key Key, crc uint32) error {
	if !t.idx.fillCRC(key, crc) {
		return fmt.Errorf("memory tier: %s: %w", key, ErrNotFound)
	}
	return nil
}

// SetPinned pins key in the tier (EvictClean skips it) or unpins it.
func (t *MemTier) SetPinned(key Key, pinned bool) error {
	if !t.idx.setFlags(key, func(e *entry) { e.set(flagPinned, pinned) }) {
		return fmt.Errorf("memory tier: %s: %w", key, ErrNotFound)
	}
	return nil
}

// Pinned reports whether key is pinned (false if absent).
func (t *MemTier) Pinned(key Key) bool { p, _ := t.idx.flags(key); return p }

// Dirty reports whether key is dirty (false if absent).
func (t *MemTier) Dirty(key Key) bool { _, d := t.idx.flags(key); return d }

// EvictClean removes least recently used files that are neither dirty nor
// pinned until Room() >= need or nothing evictable is left. It returns the
// bytes freed and the keys removed.
func (t *MemTier) EvictClean(need int64) (freed int64, evicted []Key) {
	if err := t.enter(); err != nil {
		return 0, nil
	}
	defer t.life.RUnlock()
	for _, e := range t.idx.evictClean(need) {
		if err := t.drop(e); err != nil {
			t.log.Warn("memory tier: evict", "key", e.key(), "err", err)
		}
		freed += e.size
		evicted = append(evicted, e.key())
	}
	return freed, evicted
}

// Mapping returns the read-only mapping of key's file (locked in RAM when
// locking is on), or nil when the file is not mapped: past the budget, or
// not yet, while the locking worker has it queued. With MemConfig.Host
// set, a mapping is also registered with it, and made at commit. It
// stays valid until the key is removed or evicted, so a user (a GPU copy)
// must pin the key first and not remove it.
func (t *MemTier) Mapping(key Key) []byte { return t.idx.mapping(key) }

// LockedBytes is the total size of the files mapped and locked in RAM (0
// when locking is off).
func (t *MemTier) LockedBytes() int64 { return t.pages.lockedBytes() }

// MappedBytes is the total size of the files mapped, locked or not.
func (t *MemTier) MappedBytes() int64 { return t.pages.held.Load() }

// PagesLocked reports whether the tier locks the pages it maps.
func (t *MemTier) PagesLocked() bool { return t.pages.mlock }

// Close unmaps every file and removes the private directory. Descriptors
// returned by Open stay readable. Closing twice is harmless.
func (t *MemTier) Close() error {
	if t.lockq != nil {
		t.lockq.stop() // before life: the worker takes life shared
	}
	t.life.Lock()
	defer t.life.Unlock()
	if t.closed {
		return nil
	}
	t.closed = true
	for _, e := range t.idx.drain() {
		t.pages.unlock(e.mapping())
		e.setMapping(nil)
	}
	t.dirs.forget("")
	var err error
	if !t.private {
		err = os.RemoveAll(t.root)
	}
	t.lockf.Close() // for a private tmpfs, this frees the whole filesystem
	if err != nil {
		return osErr("memory tier: close", err)
	}
	return nil
}
