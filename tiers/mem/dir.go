package mem

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"

	"github.com/ucmfs/ucmfs/tiers/rootfs"
	"github.com/ucmfs/ucmfs/tiers/tier"
	"golang.org/x/sys/unix"
)

// The memory tier's files live in a private directory under a RAM-backed
// parent (default /dev/shm). Its name is ucmfs-mem-<pid>-<random>, and it
// holds a lock file flocked by its owner for the owner's whole life. The
// directory is made as ucmfs-new-<pid>-<random>, locked, then renamed, so
// every ucmfs-mem-* directory whose lock is free belongs to a dead daemon
// (kill -9 runs no Close) and any starting daemon may remove it: RAM is
// never leaked for good.

const (
	memDirPrefix = "ucmfs-mem-"
	newDirPrefix = "ucmfs-new-"
)

// checkRAM returns an error unless dir is on tmpfs or ramfs.
func checkRAM(dir string) error {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return fmt.Errorf("statfs %s: %w", dir, err)
	}
	if st.Type != unix.TMPFS_MAGIC && st.Type != unix.RAMFS_MAGIC {
		return fmt.Errorf("memory tier: %s is not tmpfs or ramfs (filesystem type %#x)", dir, st.Type)
	}
	return nil
}

// makePrivateDir creates and locks the tier's private directory under
// parent and returns its path and the held lock file.
func makePrivateDir(parent string) (string, *os.File, error) {
	p, err := rootfs.Open(parent, 0)
	if err != nil {
		return "", nil, fmt.Errorf("memory tier: %w", err)
	}
	defer p.Close()
	tag := strconv.Itoa(os.Getpid()) + "-" + tier.RandomSuffix()
	tmp := newDirPrefix + tag
	if err := p.Mkdir(tmp, 0o700); err != nil {
		return "", nil, fmt.Errorf("memory tier: %w", err)
	}
	lockf, err := tier.LockExclusive(p, tmp+"/"+tier.LockFileName)
	if err != nil {
		p.RemoveAll(tmp)
		return "", nil, fmt.Errorf("memory tier: %w", err)
	}
	root := memDirPrefix + tag
	if err := p.Rename(tmp, root, 0); err != nil {
		lockf.Close()
		p.RemoveAll(tmp)
		return "", nil, fmt.Errorf("memory tier: %w", err)
	}
	return p.Path(root), lockf, nil
}

// cleanStale removes the private directories of dead daemons under parent
// and returns their paths. self is never touched.
func cleanStale(parent, self string, log *slog.Logger) []string {
	p, err := rootfs.Open(parent, 0)
	var ents []rootfs.Entry
	if err == nil {
		defer p.Close()
		ents, err = p.ReadDir(".") // links left out: never ours
	}
	if err != nil {
		log.Warn("memory tier: cannot list for stale directories", "dir", parent, "err", err)
		return nil
	}
	var removed []string
	for _, ent := range ents {
		name := ent.Name()
		path := p.Path(name)
		if !ent.IsDir() || path == self || !stale(p, name) {
			continue
		}
		if err := p.RemoveAll(name); err != nil {
			log.Warn("memory tier: cannot remove stale directory", "dir", path, "err", err)
			continue
		}
		log.Info("memory tier: removed directory of a dead daemon", "dir", path)
		removed = append(removed, path)
	}
	return removed
}

// stale reports whether the directory name beneath parent belongs to a
// daemon that is gone.
func stale(parent rootfs.FS, name string) bool {
	var isNew bool
	switch {
	case strings.HasPrefix(name, memDirPrefix):
	case strings.HasPrefix(name, newDirPrefix):
		isNew = true
	default:
		return false
	}
	held, err := tier.LockHeld(parent, name+"/"+tier.LockFileName)
	switch {
	case err == nil && held:
		return false
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return false
	}
	if !isNew {
		// Locked before it got this name, so a free lock means a dead owner.
		return true
	}
	// A ucmfs-new-* directory may be one a live daemon is still locking.
	return !pidAlive(name[len(newDirPrefix):])
}

// pidAlive parses the "<pid>-..." tag of a directory name and reports
// whether that process exists (unparsable tags count as alive).
func pidAlive(tag string) bool {
	s, _, _ := strings.Cut(tag, "-")
	pid, err := strconv.Atoi(s)
	if err != nil || pid <= 0 {
		return true
	}
	err = unix.Kill(pid, 0)
	return err == nil || errors.Is(err, unix.EPERM)
}
