package tiers

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/ucmfs/ucmfs/tiers/rootfs"
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

// lockPath takes the path lock of the tier directory at root (an
// absolute path), waiting up to wait for a holder to go (a daemon that
// died stuck, just freed: freeStuckHolder). ErrLocked when another live
// process holds it.
func lockPath(root string, wait time.Duration) (*os.File, error) {
	dir, err := pathLockDir()
	if err != nil {
		return nil, err
	}
	r, err := rootfs.Open(dir, 0o700)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	sum := sha256.Sum256([]byte(filepath.Clean(root)))
	name := hex.EncodeToString(sum[:16]) + ".lock"
	deadline := time.Now().Add(wait)
	for {
		f, err := lockExclusive(r, name)
		if err == nil {
			// What the lock is for, for a person looking (best effort).
			_ = r.WriteFile(name+".path", []byte(root+"\npid "+strconv.Itoa(os.Getpid())+"\n"), 0o600)
			return f, nil
		}
		if !errors.Is(err, ErrLocked) || time.Now().After(deadline) {
			return nil, fmt.Errorf("path lock %s: %w", r.Path(name), err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
