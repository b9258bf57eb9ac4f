package tier

import (
	"errors"
	"fmt"
	"os"

	"github.com/ucmfs/ucmfs/tiers/rootfs"
	"golang.org/x/sys/unix"
)

// ErrLocked reports that another live process (a daemon) holds a tier's
// lock file: NewDirTier of an unshared kind and Fsck with Repair fail
// with it.
var ErrLocked = errors.New("locked by another process")

// LockFileName is the lock file a tier keeps in its root directory (and
// the memory tier in its private one), flocked by the daemon that uses
// it. Its name starts with '.', so no model directory can collide with it.
const LockFileName = ".ucmfs.lock"

// LockExclusive opens (creating it if needed) the lock file rel beneath r and
// takes an exclusive flock on it without waiting. The lock lasts as long as
// the returned file is open, and the kernel drops it when the process dies,
// so a held lock proves a live owner.
//
// The file is opened read-only (flock needs no more), made first if it is
// missing and closed at once: on a directory of a filesystem that keeps a
// file read-only once written and closed (a files model of another ucmfs
// mount), an open for writing of an existing lock file is EACCES, and a
// file still open from its create is not seen by other processes.
func LockExclusive(r rootfs.FS, rel string) (*os.File, error) {
	f, err := openLockFile(r, rel)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	if err := flockNB(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", r.Path(rel), err)
	}
	return f, nil
}

// openLockFile opens the lock file rel beneath r read-only, making it
// (empty, 0600) first when it is missing.
func openLockFile(r rootfs.FS, rel string) (*os.File, error) {
	f, err := r.OpenRegular(rel)
	if !errors.Is(err, os.ErrNotExist) {
		return f, err
	}
	nf, err := r.OpenFile(rel, unix.O_WRONLY|unix.O_CREAT, 0o600)
	if err != nil {
		return nil, err
	}
	if err := nf.Close(); err != nil {
		return nil, err
	}
	return r.OpenRegular(rel)
}

// flockNB takes an exclusive flock on f without waiting; a lock held by
// another open file description yields ErrLocked (wrapping EWOULDBLOCK).
func flockNB(f *os.File) error {
	err := IgnoringEINTR(func() error { return unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) })
	if errors.Is(err, unix.EWOULDBLOCK) {
		return fmt.Errorf("%w: %w", ErrLocked, err)
	}
	return err
}

// LockHeld reports whether a live process holds the lock file rel beneath
// r. A missing lock file yields os.ErrNotExist.
func LockHeld(r rootfs.FS, rel string) (bool, error) {
	f, err := r.OpenRegular(rel)
	if err != nil {
		return false, err
	}
	defer f.Close()
	if err := flockNB(f); err != nil {
		if errors.Is(err, ErrLocked) {
			return true, nil
		}
		return false, err
	}
	// Closing f drops the lock we just took.
	return false, nil
}
