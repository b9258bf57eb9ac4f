package mem

import (
	"log/slog"
	"math"
	"sync"
	"sync/atomic"

	"github.com/ucmfs/ucmfs/format"
	"golang.org/x/sys/unix"
)

// Mapping returns the read-only mapping of key's file (locked in RAM when
// locking is on), or nil when the file is not mapped: past the budget, or
// not yet, while the locking worker has it queued. With Config.Host
// set, a mapping is also registered with it, and made at commit. It
// stays valid until the key is removed or evicted, so a user (a GPU copy)
// must pin the key first and not remove it.
func (t *Tier) Mapping(key format.Key) []byte { return t.idx.Mapping(key) }

// LockedBytes is the total size of the files mapped and locked in RAM (0
// when locking is off).
func (t *Tier) LockedBytes() int64 { return t.pages.lockedBytes() }

// LeakedBytes is the total size of the mappings kept mapped because the
// HostRegistrar failed to unregister them (see Config.Host); they stay
// counted in MappedBytes. 0 unless a device refused an unregistration.
func (t *Tier) LeakedBytes() int64 { return t.pages.keptBytes.Load() }

// MappedBytes is the total size of the files mapped, locked or not.
func (t *Tier) MappedBytes() int64 { return t.pages.held.Load() }

// PagesLocked reports whether the tier locks the pages it maps.
func (t *Tier) PagesLocked() bool { return t.pages.mlock }

// DefaultMaxMappings is the most block files the memory tier keeps mapped
// and locked at once. vm.max_map_count is 65530 by default and the rest of
// the process (Go runtime, GPU driver) needs mappings too.
const DefaultMaxMappings = 32768

// pageLocker maps committed memory-tier files read-only (MAP_SHARED), so a
// GPU build can register them for DMA and `.ucm/gpu` loads read them in
// place, and, when locking is on, mlocks them so their pages stay in RAM.
// Locking is on with Config.Lock "always", and with "auto" (the
// default) only while swap is active: tmpfs pages can leave RAM only for
// swap, so without swap mlock keeps nothing more in RAM and only costs
// time (faulting in and locking a fresh 2 MiB file takes ~0.3 ms). The
// mapping itself is cheap: pages are not populated.
//
// It stays within a budget of mappings and, when mlock refuses
// (RLIMIT_MEMLOCK without CAP_IPC_LOCK, or no memory), within the locked
// total at which it refused. When it cannot lock it logs one warning and
// the tier carries on with unlocked files.
//
// With a HostRegistrar, a mapping is registered right after it is mapped
// (and locked) and unregistered right before it is unmapped; a mapping
// the registrar refuses is not kept (the file stays unmapped, like one
// past the budget), so every mapping the tier holds is registered. A
// mapping the registrar fails to unregister is never unmapped: the
// device would keep a registration of an address range the process may
// map again for something else (and pinned pages behind it). It is kept
// mapped, its memory held on purpose, with one warning; close tries to
// unregister it once more and unmaps it only then (docs/design.md).
//
// Its counters are atomics; it takes no lock of its own besides the
// sync.Once of the warnings and keptMu.
type pageLocker struct {
	maxMaps   int64
	mlock     bool         // lock mappings in RAM (fixed at construction)
	maps      atomic.Int64 // mappings held
	held      atomic.Int64 // bytes held in those mappings
	ceiling   atomic.Int64 // held total at which mlock last failed
	warn      sync.Once
	host      HostRegistrar // nil: no registration
	regWarn   sync.Once
	unregWarn sync.Once
	log       *slog.Logger

	keptMu    sync.Mutex
	kept      [][]byte     // mappings whose Unregister failed: mapped still
	keptBytes atomic.Int64 // their total size
}

// HostRegistrar registers host memory for DMA by a device (a GPU). The
// memory tier calls Register with each mapping right after it maps and
// locks a file, and Unregister with the same slice right before it
// unmaps it. Implementations must be safe for concurrent use.
type HostRegistrar interface {
	// Register makes b usable for DMA; b is a read-only mapping.
	Register(b []byte) error
	// Unregister undoes Register(b). When it fails, the tier leaves b
	// mapped (Tier.LeakedBytes) and calls it again at Close.
	Unregister(b []byte) error
}

func newPageLocker(maxMaps int, mlock bool, log *slog.Logger, host HostRegistrar) *pageLocker {
	p := &pageLocker{maxMaps: int64(maxMaps), mlock: mlock, log: log, host: host}
	p.ceiling.Store(math.MaxInt64)
	return p
}

// deferred reports whether mappings are made after commit, by the tier's
// locking worker, rather than on the commit path: when pages are locked
// and no registrar waits for them (a registrar's users, GPU loads, expect
// a block's mapping as soon as it is published).
func (p *pageLocker) deferred() bool { return p.mlock && p.host == nil && p.maxMaps > 0 }

// lockedBytes is the size of the mappings locked in RAM.
func (p *pageLocker) lockedBytes() int64 {
	if !p.mlock {
		return 0
	}
	return p.held.Load()
}

// warnOnce logs the first reason locking was not possible.
func (p *pageLocker) warnOnce(msg string, args ...any) {
	p.warn.Do(func() {
		p.log.Warn("memory tier: "+msg+"; blocks stay in RAM-backed files, unmapped and unlocked", args...)
	})
}

// lock maps size bytes of the file fd, locks them when locking is on,
// and registers them with the HostRegistrar. It returns nil, having kept
// nothing, when the file is empty, the budget is spent, or the kernel or
// the registrar refuses.
func (p *pageLocker) lock(fd int, size int64) []byte {
	if size <= 0 || p.maxMaps <= 0 || size > math.MaxInt {
		return nil
	}
	if p.maps.Add(1) > p.maxMaps {
		p.maps.Add(-1)
		p.warnOnce("mapping budget reached", "max_mappings", p.maxMaps)
		return nil
	}
	if p.mlock && p.held.Load()+size > p.ceiling.Load() {
		p.maps.Add(-1)
		return nil
	}
	b, err := unix.Mmap(fd, 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		p.maps.Add(-1)
		p.warnOnce("mmap failed", "err", err)
		return nil
	}
	if p.mlock {
		if err := unix.Mlock(b); err != nil {
			_ = unix.Munmap(b)
			p.maps.Add(-1)
			// EPERM (no CAP_IPC_LOCK, zero limit), ENOMEM (over
			// RLIMIT_MEMLOCK), EAGAIN (pages could not be locked): do
			// not try again until the locked total is below this point.
			p.ceiling.Store(p.held.Load())
			p.warnOnce("mlock failed", "err", err, "locked_bytes", p.held.Load())
			return nil
		}
	}
	if p.host != nil {
		if err := p.host.Register(b); err != nil {
			_ = unix.Munmap(b)
			p.maps.Add(-1)
			p.regWarn.Do(func() {
				p.log.Warn("memory tier: a mapping could not be registered for DMA; such blocks stay unmapped", "err", err)
			})
			return nil
		}
	}
	p.held.Add(size)
	return b
}

// unlock unregisters and unmaps a mapping returned by lock (munmap also
// unlocks). nil is allowed. A mapping that fails to unregister is kept
// mapped instead (see pageLocker).
func (p *pageLocker) unlock(b []byte) {
	if b == nil {
		return
	}
	if p.host != nil {
		if err := p.host.Unregister(b); err != nil {
			p.keep(b, err)
			return
		}
	}
	p.unmap(b)
}

// unmap unmaps b and takes it out of the counts.
func (p *pageLocker) unmap(b []byte) {
	_ = unix.Munmap(b)
	p.held.Add(-int64(len(b)))
	p.maps.Add(-1)
}

// keep records b, which the registrar failed to unregister: it stays
// mapped (and counted in held and maps, which it still takes).
func (p *pageLocker) keep(b []byte, err error) {
	p.keptMu.Lock()
	p.kept = append(p.kept, b)
	p.keptMu.Unlock()
	p.keptBytes.Add(int64(len(b)))
	p.unregWarn.Do(func() {
		p.log.Warn("memory tier: a mapping could not be unregistered for DMA; it stays mapped, its memory held, "+
			"rather than unmapped under a live registration; later ones are not logged", "err", err, "bytes", len(b))
	})
}

// close tries once more to unregister the mappings kept by keep, and
// unmaps those it can. The others stay mapped until the process exits.
func (p *pageLocker) close() {
	p.keptMu.Lock()
	kept := p.kept
	p.kept = nil
	p.keptMu.Unlock()
	var left [][]byte
	for _, b := range kept {
		if err := p.host.Unregister(b); err != nil {
			left = append(left, b)
			continue
		}
		p.keptBytes.Add(-int64(len(b)))
		p.unmap(b)
	}
	if len(left) > 0 {
		p.log.Warn("memory tier: mappings still registered for DMA at close stay mapped until the process exits",
			"mappings", len(left), "bytes", p.keptBytes.Load())
		p.keptMu.Lock()
		p.kept = append(p.kept, left...)
		p.keptMu.Unlock()
	}
}
