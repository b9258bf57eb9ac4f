package dir

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/ucmfs/ucmfs/tiers/rootfs"
	"github.com/ucmfs/ucmfs/tiers/tier"
	"golang.org/x/sys/unix"
)

// A private tier's lock file lives in its directory, and an rm -rf of the
// directory takes it away: a second daemon could then mount the same path
// while the first still ran. So a private tier also holds a lock that no
// rm -rf of the tier reaches, named by the tier's path, outside it: in
// /run/lock/ucmfs for root, else in $XDG_RUNTIME_DIR/ucmfs or the user's
// cache directory (ucmfs/locks). Two daemons of one host never hold one
// path at once, whatever happened to the directory at it.

// pathLockDir is where the path locks of this daemon's user live.
func pathLockDir() (string, error) {
	if os.Geteuid() == 0 {
		return "/run/lock/ucmfs", nil
	}
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "ucmfs"), nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "ucmfs", "locks"), nil
}

// pathLock is a held path lock: released by unlinking its file while
// it is held, then closing it (a taker checks that the file it locked is
// still the one at the name, so none is left on the disk and none is
// taken twice).
type pathLock struct {
	dir  *rootfs.Root
	name string
	f    *os.File
}

// lockPath takes the path lock of the tier directory at root (an
// absolute path), waiting up to wait for a holder to go (a daemon that
// died stuck, just freed: freeStuckHolder). ErrLocked when another live
// process holds it.
func lockPath(root string, wait time.Duration) (*pathLock, error) {
	dir, err := pathLockDir()
	if err != nil {
		return nil, err
	}
	r, err := rootfs.Open(dir, 0o700)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte(filepath.Clean(root)))
	name := hex.EncodeToString(sum[:16]) + ".lock"
	deadline := time.Now().Add(wait)
	for {
		f, err := tier.LockExclusive(r, name)
		if err == nil {
			var held, now unix.Stat_t
			if unix.Fstat(int(f.Fd()), &held) == nil && r.Lstat(name, &now) == nil && held.Ino == now.Ino && held.Dev == now.Dev {
				return &pathLock{dir: r, name: name, f: f}, nil
			}
			f.Close() // unlinked by its last holder meanwhile: take the new one
			continue
		}
		if !errors.Is(err, tier.ErrLocked) || time.Now().After(deadline) {
			r.Close()
			return nil, fmt.Errorf("path lock %s: %w", r.Path(name), err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// release unlinks the lock's file and lets the lock go.
func (l *pathLock) release() {
	_ = l.dir.Unlink(l.name)
	l.f.Close()
	l.dir.Close()
}
