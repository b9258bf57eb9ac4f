package dir

import (
	"fmt"

	"github.com/ucmfs/ucmfs/tiers/tier"
	"golang.org/x/sys/unix"
)

// lstat is unix.Lstat, again when interrupted: for paths an operator
// names (locate.go), never beneath a tier's root (package rootfs).
func lstat(p string, st *unix.Stat_t) error {
	return tier.IgnoringEINTR(func() error { return unix.Lstat(p, st) })
}

// Syncfs syncs the filesystem the tier stands on, through its root
// (rootfs.FS.Syncfs, made again when interrupted), never by its path: a
// filesystem given to the tier (DirConfig.OpenFS: a crash filesystem's)
// sees the sync, and one mounted over the path since is not the one
// synced. A flush makes what was written back earlier durable so.
func (t *Tier) Syncfs() error {
	if err := t.do("syncfs", t.fs.Syncfs, nil); err != nil {
		return fmt.Errorf("%s tier: syncfs %s: %w", t.kind, t.root, err)
	}
	return nil
}
