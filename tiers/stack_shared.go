package tiers

import (
	"errors"
	"fmt"
	"os"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/layout/registry"
	"github.com/ucmfs/ucmfs/tiers/dir"
	"github.com/ucmfs/ucmfs/tiers/tier"
	"golang.org/x/sys/unix"
)

// What the stack does for a shared tier (nfs, ds3fs), where other daemons
// remove and evict files:
//
//   - Reads never run on the shared directory: a block found there is
//     copied (CRC-checked) into the memory tier before the open is
//     answered, or, when memory has no room, into a private memfd that
//     lives as long as the open. On NFS another host's unlink makes this
//     host's descriptors of the file fail with ESTALE (no silly rename
//     across hosts), so a descriptor kept open would not be enough.
//   - A key the shared tier's revalidation finds gone is dropped from the
//     memory tier too when it is only a clean copy there (not pinned, not
//     dirty), so the mount stops showing it within the TTL.
//   - Eviction from a shared tier is by mtime, which every daemon moves on
//     use (Touch), and never takes a file younger than KeepRecent.

// HasShared reports whether a tier of the stack is shared.
func (s *Stack) HasShared() bool {
	for _, d := range s.dirs {
		if d.Shared() {
			return true
		}
	}
	return false
}

// sharedAt is the shared directory tier id, or nil.
func (s *Stack) sharedAt(id TierID) tier.Lower {
	if id == Memory || int(id) > len(s.dirs) || !s.dirs[id-1].Shared() {
		return nil
	}
	return s.dirs[id-1]
}

// revalidateShared revalidates k's shard on every shared tier (cheap
// within the TTL), so that a memory copy of a block another daemon
// removed goes too (dropGone).
func (s *Stack) revalidateShared(k format.Key) {
	for _, d := range s.dirs {
		d.Revalidate(k) // nothing to do for a private tier
	}
}

// watchShared subscribes the stack to the keys its shared tiers find gone.
func (s *Stack) watchShared() {
	for _, d := range s.dirs {
		d.WatchGone(func(keys []format.Key) { go s.dropGone(keys, false) },
			func(keys []format.Key) { go s.dropGone(keys, true) })
	}
}

// dropGone drops the copies of keys another daemon removed from a shared
// tier, unless another shared tier of the stack still holds them: the
// clean, unpinned memory copy, and the private tiers' (a cache of the
// share, move_shared.go). A dirty or pinned block in memory stays,
// and with it the private copies. With replaced (another host published
// a new version on the share) the copies go whatever the shared tiers
// hold now: they are the old version's. So for a File (a name that
// takes new versions) gone from the share: what a shared tier holds
// under its name by the time the drop runs (it waits for the key's lock)
// was published after the removal, another version (a lookup found it
// meanwhile); kept, the old copies were served for good, since every
// later check found the share's file as the index had it.
func (s *Stack) dropGone(keys []format.Key, replaced bool) {
	for _, k := range keys {
		mu := s.keyLock(k)
		mu.Lock()
		pinned, dirty := s.mem.Index().Flags(k)
		held := false
		for _, d := range s.dirs {
			if d.Shared() && d.Index().Has(k) && !replaced && !registry.Of(k).Replaces() {
				held = true
			}
		}
		if !pinned && !dirty && !held {
			if s.mem.Index().Has(k) {
				_ = s.mem.Remove(k)
			}
			for _, d := range s.dirs {
				if !d.Shared() && d.Index().Has(k) {
					_ = d.Remove(k)
				}
			}
			s.mu.Lock()
			delete(s.verified, k)
			s.mu.Unlock()
		}
		mu.Unlock()
	}
	s.signalRoom()
}

// privateCopy copies k from the shared tier d into an anonymous memory
// file (memfd), CRC-checked: the descriptor of a read when memory has no
// room, readable whatever other hosts do to the file.
func (s *Stack) privateCopy(d tier.Lower, k format.Key) (*os.File, error) {
	fd, err := unix.MemfdCreate("ucmfs-"+k.FileName(), unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("%s: private copy: %w", k, err)
	}
	w := &memfdWriter{f: os.NewFile(uintptr(fd), "memfd:"+k.FileName())}
	if _, _, err := s.copyOut(d, w, k); err != nil {
		w.f.Close()
		if dir.GoneErr(err) && !errors.Is(err, ErrNotFound) {
			return nil, fmt.Errorf("%s: %w: %w", k, ErrNotFound, err)
		}
		return nil, err
	}
	return w.f, nil
}

var _ Tier = (*memfdWriter)(nil)

// memfdWriter is the Writer of privateCopy; copyOut is its only user.
type memfdWriter struct {
	f   *os.File
	off int64
}

// Name, Persistent, ... make the writer its own destination tier.
func (w *memfdWriter) Name() string { return "private copy" }

func (w *memfdWriter) Persistent() bool { return false }

func (w *memfdWriter) Create(format.Key) (Writer, error) { return w, nil }

func (w *memfdWriter) Open(format.Key) (*os.File, error) { return nil, errors.ErrUnsupported }

func (w *memfdWriter) Stat(format.Key) (Info, error) { return Info{}, ErrNotFound }

func (w *memfdWriter) Remove(format.Key) error { return ErrNotFound }

func (w *memfdWriter) List(string, func(Info) bool) {}

func (w *memfdWriter) Usage() Usage { return Usage{} }

func (w *memfdWriter) Close() error { return nil }

// File is the memfd.
func (w *memfdWriter) File() *os.File { return w.f }

// Write appends p.
func (w *memfdWriter) Write(p []byte) (int, error) {
	n, err := w.f.WriteAt(p, w.off)
	w.off += int64(n)
	return n, err
}

// Commit has nothing to publish: the copy is private.
func (w *memfdWriter) Commit(CommitOptions) (Info, error) { return Info{}, nil }

// Abort leaves the closing to privateCopy.
func (w *memfdWriter) Abort() {}

// ShareModel makes model's directory on every shared tier, so a model
// made empty on this host (mkdir) is seen by the others' daemons.
func (s *Stack) ShareModel(model string) error {
	if err := format.ValidateModel(model); err != nil {
		return err
	}
	var errs []error
	for _, d := range s.dirs {
		if !d.Shared() {
			continue
		}
		if err := d.Do("mkdir", func() error { return d.Root().Mkdir(model, 0o755) }); err != nil && !errors.Is(err, os.ErrExist) {
			errs = append(errs, fmt.Errorf("%s tier: %w", d.Name(), err))
		}
	}
	return errors.Join(errs...)
}

// staleVersion drops this host's copies of k, a version older than the
// one another host published on the share since: lookups find the
// share's.
func (s *Stack) staleVersion(k format.Key) { go s.dropGone([]format.Key{k}, true) }

// ScanTree indexes at once, on every shared tier, the files of model's
// tree its index does not hold yet, as the background scan would (for a
// caller that plans from the index before that scan is done: a directory
// move a crash cut short, finished at start).
func (s *Stack) ScanTree(model string) {
	if format.ValidateModel(model) != nil {
		return
	}
	for _, d := range s.dirs {
		d.AdoptTree(model) // nothing on a private tier
	}
}
