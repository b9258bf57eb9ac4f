package tiers

import (
	"errors"
	"fmt"
	"path"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/layout/registry"
	"github.com/ucmfs/ucmfs/tiers/dir"
	"github.com/ucmfs/ucmfs/tiers/tier"
)

// Files moved on disk. A file of a files model moved to another name (a
// rename of it or of a directory above it, store.Store.MoveFile) whose
// current version is on the first directory tier is linked there under
// the new name rather than copied through memory and written back:
// LinkOnDisk stages a hard link of the tier's file beside the new name,
// which Publish renames into place as any file staged on disk
// (publishOnDisk). Both names are one inode, with its bytes and its CRC
// xattr, until the old name goes. The link's index entry has from's CRC,
// and a file whose CRC this run has not checked yet stays unchecked under
// its new name: its first read checks it against that CRC (verifyOnce).

// errNoLink: the first directory tier cannot take a link now (shared with
// other daemons, not in place, not Up); the caller copies.
var errNoLink = errors.New("no link on the first directory tier")

// LinkOnDisk starts the publish of to as a hard link of from's file on
// the first directory tier. ErrNotFound when that tier does not hold
// from's current version (memory holds one not written back yet);
// errNoLink or a filesystem error (no hard links) when it cannot link.
// Either way the caller copies instead.
func (s *Stack) LinkOnDisk(from, to format.Key) (*PendingWrite, error) {
	if s.isClosed() {
		return nil, ErrClosed
	}
	d := s.linkTier()
	if d == nil || !registry.Of(from).Tree() || !registry.Of(to).Tree() {
		return nil, errNoLink
	}
	mu := s.keyLock(from) // no publish of from in between
	mu.Lock()
	defer mu.Unlock()
	if s.mem.Dirty(from) {
		return nil, fmt.Errorf("%s: its current version is in memory only: %w", from, ErrNotFound)
	}
	// The CRC the tier keeps for from (its index, or the file's xattr or
	// sum): the link's, so that the link's first read checks it.
	crc, hasCRC, err := d.CRC(from)
	if err != nil {
		return nil, err
	}
	w, err := d.Link(from, to)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	checked := s.verified[from]
	s.mu.Unlock()
	dw := &diskWriter{StagedFile: w, set: &s.staged, linked: true, checked: checked, crc: crc, hasCRC: hasCRC}
	s.staged.add(dw)
	return &PendingWrite{key: to, w: dw}, nil
}

// Linkable reports whether LinkOnDisk would link k now rather than have
// its caller copy it: the first directory tier can link, holds k, and
// memory holds no version of it not written back.
func (s *Stack) Linkable(k format.Key) bool {
	d := s.linkTier()
	if d == nil || !registry.Of(k).Tree() || s.mem.Dirty(k) {
		return false
	}
	_, err := d.Stat(k)
	return err == nil
}

// linkTier is the first directory tier when it can take a link now (a
// directory tier, this daemon's alone, in place, Up), else nil.
func (s *Stack) linkTier() *dir.Tier {
	if len(s.dirs) == 0 {
		return nil
	}
	d, ok := s.dirs[0].(*dir.Tier) // only a directory tier links files (tier.Lower)
	if !ok || !d.Inline() || !d.InPlace() || d.Health() != Up {
		return nil
	}
	return d
}

// SyncLinks makes the names of files published by LinkOnDisk without a
// sync (keys) durable: one fsync of each directory of them on the first
// directory tier, where a sync at each publish would cost one a file.
func (s *Stack) SyncLinks(keys []format.Key) error {
	if len(keys) == 0 {
		return nil
	}
	d := s.dirs[0]
	done := make(map[string]bool)
	for _, k := range keys {
		dir := path.Dir(k.Path())
		if done[dir] {
			continue
		}
		done[dir] = true
		if err := d.Do("sync", func() error { return tier.SyncDir(d.Root(), dir) }); err != nil {
			return fmt.Errorf("%s tier: %w", d.Name(), err)
		}
	}
	return nil
}
