package dir

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/tiers/tier"
	"golang.org/x/sys/unix"
)

// A directory tier is private (the daemon's alone: the kinds nvme and
// any configured unshared) or shared (nfs, ds3fs: other daemons publish,
// read, evict and remove files in the same directory). What differs is
// one interface, dirSharing, with one type for each: privateDir here and
// sharedDir (shared.go, shared_scan.go, shared_evict.go). The tier and
// the stack ask it, never which kind it is.

// dirSharing is what a directory tier does according to who else uses
// its directory.
type dirSharing interface {
	// start readies the index when the tier opens: a private tier locks
	// its directory and rebuilds its index before it serves; a shared
	// one starts empty.
	start() error
	// serve starts the background work of an opened tier, if any (a
	// shared tier's scan; sizeless: the tier takes the filesystem's
	// free space as its capacity once the scan is done).
	serve(sizeless bool)
	// stat is Tier.Stat: the index, trusted or revalidated.
	stat(key format.Key) (tier.Info, error)
	// get is stat once the key's shard was revalidated (Stack.Stat):
	// the index only, or for a shared tier the disk for a key it lacks.
	get(key format.Key) (tier.Info, bool)
	// has is get for batch lookups: no syscall while the index knows.
	has(key format.Key) bool
	// revalidate makes the index of key's shard at most a TTL old.
	revalidate(key format.Key)
	// touched records a use of key others should see (a shared file's
	// mtime, which every daemon evicts by).
	touched(key format.Key)
	// models adds to names (the index's models) those only the
	// directory shows, sorted.
	models(names []string) []string
	// hasModel reports a model the index lacks but the directory has.
	hasModel(model string) bool
	// scanned reports whether the index knows the whole directory.
	scanned() bool
	// mayEvict reports whether key may be evicted now.
	mayEvict(key format.Key) bool
	// inPlace reports whether reads may use the tier's file itself (a
	// shared file may vanish under an open descriptor: it is copied).
	inPlace() bool
	// opensUnindexed reports whether Open looks for a key the index lacks.
	opensUnindexed() bool
	// removeCopies removes what key's name still holds after a user's
	// removal that began at began took its file (shared_copies.go).
	removeCopies(key format.Key, began time.Time)
	// healthErr is err as the tier's health sees it.
	healthErr(err error) error
	// relock locks the directory at the tier's path again, after its
	// directory was lost (root.go); reindex rebuilds the index from
	// it.
	relock() error
	reindex() error
	// recordOwner records this daemon's FUSE connection beside a
	// private tier's lock (lock_stuck.go); a shared tier has no lock.
	recordOwner(conn uint32) error
	// release ends the sharing as the tier closes (clean) or fails to
	// open: a private tier writes its index snapshot at a clean close of
	// a healthy tier, and unlocks the directory.
	release(clean bool)
}

// privateDir is a directory only this daemon uses: locked at open, its
// index rebuilt at start (from the snapshot of the last clean close
// where a shard did not change) and trusted from then on.
type privateDir struct {
	*Tier
	lockf *os.File  // the lock file, held while the tier is open
	pathf *pathLock // the path lock, outside the directory (lock_run.go)
}

func (p *privateDir) start() error {
	f, err := tier.LockExclusive(p.fs, tier.LockFileName)
	var wait time.Duration // for the path lock: a stuck holder freed lets both go
	if errors.Is(err, tier.ErrLocked) {
		if lock, ferr := freeStuckHolder(p.fs, tier.LockFileName, p.log); lock != nil || ferr != nil {
			f, err, wait = lock, ferr, stuckWait
		}
	}
	switch {
	case errors.Is(err, tier.ErrLocked):
		return fmt.Errorf("%s tier: %s is in use by another daemon: %w", p.kind, p.root, err)
	case errors.Is(err, os.ErrPermission), errors.Is(err, unix.EROFS):
		return fmt.Errorf("%s tier: %s is not writable by this daemon (uid %d): %w", p.kind, p.root, os.Getuid(), err)
	case err != nil:
		return fmt.Errorf("%s tier: %s: %w", p.kind, p.root, err)
	}
	p.lockf = f
	pf, err := lockPath(p.root, wait)
	switch {
	case errors.Is(err, tier.ErrLocked):
		return fmt.Errorf("%s tier: %s is in use by another daemon (it holds the path's lock): %w", p.kind, p.root, err)
	case err != nil:
		// No place for it (a read-only /run): the lock file in the
		// directory is the only one, as before.
		p.log.Warn("tier: no lock of the tier's path outside it; a second daemon may take the path if the directory is removed", "kind", p.kind, "dir", p.root, "err", err)
	}
	p.pathf = pf
	return p.rebuild()
}

func (p *privateDir) serve(bool) {}

func (p *privateDir) stat(key format.Key) (tier.Info, error) {
	info, ok := p.get(key)
	if !ok {
		return tier.Info{}, p.notFound(key)
	}
	return info, nil
}

func (p *privateDir) get(key format.Key) (tier.Info, bool) {
	info, _, ok := tier.IndexGet(p.idx, key)
	return info, ok
}

func (p *privateDir) has(key format.Key) bool { return p.idx.Has(key) }

func (p *privateDir) revalidate(format.Key)              {}
func (p *privateDir) touched(format.Key)                 {}
func (p *privateDir) models(names []string) []string     { return names }
func (p *privateDir) hasModel(string) bool               { return false }
func (p *privateDir) scanned() bool                      { return true }
func (p *privateDir) mayEvict(format.Key) bool           { return true }
func (p *privateDir) inPlace() bool                      { return true }
func (p *privateDir) opensUnindexed() bool               { return false }
func (p *privateDir) removeCopies(format.Key, time.Time) {}
func (p *privateDir) healthErr(err error) error          { return err }

func (p *privateDir) recordOwner(conn uint32) error {
	return writeOwner(p.fs, lockOwner{pid: os.Getpid(), conn: conn})
}

func (p *privateDir) release(clean bool) {
	// A file superseded still (its new version was not written here) is
	// in no index: a snapshot would hide it from the next start, which
	// then walks the directory instead and finds it.
	if clean && p.health.get() == Up && !p.anySuperseded() {
		if err := p.writeSnapshot(); err != nil {
			p.log.Warn("index snapshot not written", "kind", p.kind, "dir", p.root, "err", err)
		}
	}
	if p.lockf != nil {
		_ = p.fs.Unlink(OwnerFileName)
		p.lockf.Close()
		p.lockf = nil
	}
	if p.pathf != nil {
		p.pathf.release()
		p.pathf = nil
	}
}
