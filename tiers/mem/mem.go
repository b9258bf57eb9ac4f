package mem

import (
	"fmt"
	"log/slog"
	"os"
	"sync"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/tiers/index"
	"github.com/ucmfs/ucmfs/tiers/rootfs"
	"github.com/ucmfs/ucmfs/tiers/tier"
	"golang.org/x/sys/unix"
)

// Config configures a Tier.
type Config struct {
	// Capacity is the most bytes of files the tier holds (required, > 0).
	Capacity int64
	// MaxFiles is the most files the tier holds (0: tier.DefaultMaxFiles,
	// negative: no bound).
	MaxFiles int64
	// MaxPinned is the most bytes users' pins (user.ucm.pinned, on a
	// file or a directory) may keep in the tier: 0 takes half of
	// Capacity, negative: no bound (see Tier.PinWithin).
	MaxPinned int64
	// Pending is the room, beyond Capacity, the tier's private tmpfs
	// keeps for files being written (PendingWrites): the tmpfs is sized
	// Capacity+Pending, so the kernel fails a write past it with ENOSPC,
	// passthrough writes included. 0: the tmpfs default (half the RAM).
	Pending int64
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
	// DMA) and unregisters it before unmapping; a mapping it fails to
	// unregister stays mapped (LeakedBytes). nil registers nothing.
	Host HostRegistrar
	// Private chooses where the files live: PrivateAuto ("" or "auto",
	// the default) mounts a tmpfs of the tier's own with transparent huge
	// pages when the process may mount, falling back to a directory under
	// Dir; PrivateOff always uses the directory under Dir.
	Private string
	// WrapFS, when set, is given the filesystem of the tier's private
	// directory, and the tier's operations on its files go through the
	// one it returns (nil: the directory's own). Tests stand the tier on
	// one that fails, stalls or acts at a chosen operation (crashfs.Wrap),
	// as a directory tier's Config.OpenFS does.
	WrapFS func(rootfs.FS) rootfs.FS
}

// Values of Config.Private.
const (
	PrivateAuto = "auto"
	PrivateOff  = "off"
)

// Tier is the memory tier: each block is a file in a private directory
// on tmpfs, mapped (and locked in RAM, see Config.Lock) while the
// mapping budget allows. Files do
// not survive the daemon. New files are dirty until the stack has written
// them back (SetDirty); dirty and pinned files are never evicted.
//
// Lock order: Tier.life, then a writer's mutex, then index.mu (a leaf).
// life is held shared by every operation that touches the directory and
// exclusively by Close, which removes it.
type Tier struct {
	root  string
	log   *slog.Logger
	idx   *index.Index
	pages *pageLocker
	lockq *lockQueue // nil unless pages are locked after commit
	dirs  tier.DirCache
	late  *lateDrops // removed files not yet released (late.go)

	life   sync.RWMutex
	closed bool     // under life
	lockf  *os.File // the held lock file, or the root of the private tmpfs
	// fs is root, held by descriptor: the tier's own operations name
	// their files beneath it (package rootfs: no link followed), which
	// also spares the kernel the walk of a /proc/self/fd link on each
	// (~3 µs of an open here). rootf holds the descriptor when lockf is
	// not the root.
	fs    rootfs.FS
	rootf *os.File
	// private: root is a detached tmpfs of the tier's own (privateTmpfs).
	private bool
}

var _ tier.Tier = (*Tier)(nil)

// New creates the tier's private directory under cfg.Dir, after
// removing the directories left there by dead daemons.
func New(cfg Config) (*Tier, error) {
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
		root, lockf, err = privateTmpfs(cfg.Dir, tmpfsSize(cfg))
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
	if unix.Statfs(root, &st) == nil { // the tier's own directory, made by this daemon
		if free := int64(st.Bavail) * st.Bsize; free < cfg.Capacity {
			log.Warn("memory tier: capacity exceeds the free space of its filesystem",
				"dir", cfg.Dir, "capacity", cfg.Capacity, "free", free)
		}
	}
	if why != "" {
		log.Info("memory tier: " + why)
	}
	dirFd, rootf := -1, (*os.File)(nil)
	if isProcFd(root) {
		dirFd = int(lockf.Fd())
	} else {
		if rootf, err = os.OpenFile(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err != nil {
			lockf.Close()
			return nil, fmt.Errorf("memory tier: %w", err)
		}
		dirFd = int(rootf.Fd())
	}
	var fs rootfs.FS = rootfs.FromFD(dirFd, root)
	if cfg.WrapFS != nil {
		fs = cfg.WrapFS(fs)
	}
	t := &Tier{
		fs:      fs,
		rootf:   rootf,
		root:    root,
		private: isProcFd(root),
		log:     log,
		idx:     index.New(cfg.Capacity),
		pages:   newPageLocker(cfg.MaxMappings, mlock, log, cfg.Host),
		lockf:   lockf,
	}
	// A tmpfs file takes whole pages: so does its charge (index.SetUnit).
	t.idx.SetUnit(int64(os.Getpagesize()))
	t.idx.SetMaxFiles(tier.MaxFiles(cfg.MaxFiles))
	t.idx.SetPinLimit(pinLimit(cfg.MaxPinned, cfg.Capacity))
	t.startLate()
	if t.pages.deferred() {
		t.lockq = newLockQueue()
		go t.lockLoop(t.lockq)
	}
	return t, nil
}

// Name is "mem".
func (t *Tier) Name() string { return "mem" }

// Persistent is false: the files go with the daemon.
func (t *Tier) Persistent() bool { return false }

// Dir is the tier's private directory.
func (t *Tier) Dir() string { return t.root }

// openKey opens key's published file (whether the index holds it or not).
func (t *Tier) openKey(key format.Key, flag int) (*os.File, error) {
	return t.fs.OpenFile(key.Path(), flag, 0)
}

// enter takes the shared life lock; it fails once the tier is closed.
func (t *Tier) enter() error {
	t.life.RLock()
	if t.closed {
		t.life.RUnlock()
		return fmt.Errorf("memory tier: %w", tier.ErrClosed)
	}
	return nil
}

// Close unmaps every file and removes the private directory. Descriptors
// returned by Open stay readable. Closing twice is harmless.
func (t *Tier) Close() error {
	if t.lockq != nil {
		t.lockq.stop() // before life: the worker takes life shared
	}
	t.stopLate()
	t.life.Lock()
	defer t.life.Unlock()
	if t.closed {
		return nil
	}
	t.closed = true
	for _, e := range t.idx.Drain() {
		t.pages.unlock(e.Mapping())
		e.SetMapping(nil)
	}
	t.pages.close()
	t.dirs.Forget("")
	var err error
	if !t.private {
		err = os.RemoveAll(t.root) // the administrator's path, made by this daemon (dir.go)
	}
	if t.rootf != nil {
		t.rootf.Close()
	}
	t.lockf.Close() // for a private tmpfs, this frees the whole filesystem
	if err != nil {
		return tier.OSErr("memory tier: close", err)
	}
	return nil
}
