package dir

import (
	"fmt"

	"github.com/ucmfs/ucmfs/tiers/rootfs"
	"github.com/ucmfs/ucmfs/tiers/tier"
	"golang.org/x/sys/unix"
)

// lstat is unix.Lstat, again when interrupted: for paths an operator
// names (locate.go), never beneath a tier's root (package rootfs).
func lstat(p string, st *unix.Stat_t) error {
	return tier.IgnoringEINTR(func() error { return unix.Lstat(p, st) })
}

// Syncfs syncs the filesystem holding dir (a tier's directory, the
// administrator's path), made again when interrupted.
func Syncfs(dir string) error {
	r, err := rootfs.Open(dir, 0)
	if err != nil {
		return err
	}
	defer r.Close()
	if err := r.Syncfs(); err != nil {
		return fmt.Errorf("syncfs %s: %w", dir, err)
	}
	return nil
}
