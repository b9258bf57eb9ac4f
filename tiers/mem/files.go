package mem

import (
	"errors"
	"fmt"
	"os"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/tiers/index"
	"github.com/ucmfs/ucmfs/tiers/tier"
	"golang.org/x/sys/unix"
)

// Create starts a file for key in the tier's staging area.
func (t *Tier) Create(key format.Key) (tier.Writer, error) {
	if err := tier.CheckKey(key); err != nil {
		return nil, err
	}
	if err := t.enter(); err != nil {
		return nil, err
	}
	defer t.life.RUnlock()
	for {
		tmp := tier.TmpPrefix + tier.RandomSuffix()
		f, err := t.fs.OpenFile(tmp, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL, 0o444)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return nil, tier.OSErr("memory tier: create", err)
		}
		return &memWriter{t: t, key: key, tmp: tmp, f: f}, nil
	}
}

// Open opens a published file and marks it used.
func (t *Tier) Open(key format.Key) (*os.File, error) {
	if err := t.enter(); err != nil {
		return nil, err
	}
	defer t.life.RUnlock()
	if !t.idx.Touch(key) {
		return nil, fmt.Errorf("memory tier: %s: %w", key, tier.ErrNotFound)
	}
	f, err := t.openKey(key, unix.O_RDONLY)
	if err != nil {
		return nil, tier.NotFound("memory tier: open", err)
	}
	return f, nil
}

// OpenHit is Open for the stack's read path: it reports a miss as false
// (no error built) and returns the file's size from the index (no fstat)
// and its index entry (the Token of the handle).
func (t *Tier) OpenHit(key format.Key) (*os.File, int64, *index.Entry, bool) {
	if t.enter() != nil {
		return nil, 0, nil, false
	}
	defer t.life.RUnlock()
	e, size := t.idx.TouchEntry(key)
	if e == nil {
		return nil, 0, nil, false
	}
	f, err := t.openKey(key, unix.O_RDONLY)
	if err != nil {
		return nil, 0, nil, false
	}
	return f, size, e, true
}

// Stat describes a published file.
func (t *Tier) Stat(key format.Key) (tier.Info, error) {
	info, _, ok := tier.IndexGet(t.idx, key)
	if !ok {
		return tier.Info{}, fmt.Errorf("memory tier: %s: %w", key, tier.ErrNotFound)
	}
	return info, nil
}

// Unchanged reports whether key's file still has the size and mtime the
// tier recorded when it was published (or its times were set through the
// stack); held is false when the tier does not hold key. A file that
// changed was written behind the tier's back: through a descriptor its
// writer kept after publishing, which with FUSE passthrough the kernel
// writes directly.
func (t *Tier) Unchanged(key format.Key) (unchanged, held bool) {
	info, _, ok := tier.IndexGet(t.idx, key)
	if !ok {
		return false, false
	}
	return tier.SameFile(t.fs, key.Path(), info)
}

// Remove deletes a published file, pinned or dirty alike. Its mapping is
// unmapped: a caller using Mapping must pin the key and not remove it.
func (t *Tier) Remove(key format.Key) error { return t.remove(key, false) }

// remove is Remove; late: the release is left to the late-drop worker
// when it has room (RemoveLate).
func (t *Tier) remove(key format.Key, late bool) error {
	if err := t.enter(); err != nil {
		return err
	}
	defer t.life.RUnlock()
	e, ok := t.idx.Remove(key)
	if !ok {
		return fmt.Errorf("memory tier: %s: %w", key, tier.ErrNotFound)
	}
	if late && t.late.add(e) {
		return nil
	}
	return t.drop(e)
}

// drop releases a removed entry: unmaps it and unlinks its file.
func (t *Tier) drop(e *index.Entry) error {
	t.pages.unlock(e.Mapping())
	e.SetMapping(nil)
	if err := t.fs.Unlink(e.Key().Path()); err != nil && !errors.Is(err, unix.ENOENT) {
		return tier.OSErr("memory tier: remove", err)
	}
	return nil
}

// List calls fn for the published files of model ("" for all).
func (t *Tier) List(model string, fn func(tier.Info) bool) {
	t.idx.Each(model, func(e *index.Entry) bool { return fn(tier.InfoOf(e)) })
}

// Models returns the models that have files in the tier, sorted.
func (t *Tier) Models() []string { return t.idx.ModelNames() }

// ModelUsage returns the number of files and bytes of model in the tier.
func (t *Tier) ModelUsage(model string) (files, bytes int64) { return t.idx.ModelUsage(model) }

// RemoveModel removes every file of model, dirty and pinned ones included.
func (t *Tier) RemoveModel(model string) error {
	if err := format.ValidateModel(model); err != nil {
		return err
	}
	if err := t.enter(); err != nil {
		return err
	}
	defer t.life.RUnlock()
	t.SettleAll()
	for _, e := range t.idx.RemoveModel(model) {
		t.pages.unlock(e.Mapping())
		e.SetMapping(nil)
	}
	t.dirs.Forget(model)
	if err := t.fs.RemoveAll(model); err != nil {
		return tier.OSErr("memory tier: remove model", err)
	}
	return nil
}

// ForgetTreeDir drops what the tier knows of the directory rel of
// model's tree and beneath it (removed or renamed by the stack).
func (t *Tier) ForgetTreeDir(model, rel string) { t.dirs.ForgetTree(model + "/" + rel) }

// Usage reports capacity and use.
func (t *Tier) Usage() tier.Usage { return tier.Usage(t.idx.Usage()) }

// Room is the capacity left: Capacity minus Used minus bytes of commits in
// flight.
func (t *Tier) Room() int64 { return t.idx.Room() }

// Touch marks key as just used (LRU).
func (t *Tier) Touch(key format.Key) { t.idx.Touch(key) }

// SetDirty marks key dirty (not yet on a persistent tier) or clean.
func (t *Tier) SetDirty(key format.Key, dirty bool) error {
	if !t.idx.SetFlags(key, func(e *index.Entry) { e.Set(index.Dirty, dirty) }) {
		return fmt.Errorf("memory tier: %s: %w", key, tier.ErrNotFound)
	}
	return nil
}

// SetCRC records crc as the payload CRC-32C of key when the tier has none
// for it (a block published without a CRC in its header gets one from
// the first copy that reads it). A CRC already known is kept. from is the
// Entry whose file the CRC was computed from: when key's Entry is another
// one (a File replaced since), nothing is recorded (ErrNotFound).
func (t *Tier) SetCRC(key format.Key, from *index.Entry, crc uint32) error {
	if !t.idx.FillCRCOf(key, from, crc) {
		return fmt.Errorf("memory tier: %s: %w", key, tier.ErrNotFound)
	}
	return nil
}

// SetPinned pins key in the tier (EvictClean skips it) or unpins it.
func (t *Tier) SetPinned(key format.Key, pinned bool) error {
	if !t.idx.SetFlags(key, func(e *index.Entry) { e.Set(index.Pinned, pinned) }) {
		return fmt.Errorf("memory tier: %s: %w", key, tier.ErrNotFound)
	}
	return nil
}

// pinLimit is the bound Config.MaxPinned gives a tier of capacity
// bytes (0: none).
func pinLimit(n, capacity int64) int64 {
	switch {
	case n == 0:
		return capacity / 2
	case n < 0:
		return 0
	}
	return n
}

// PinWithin pins key as a user's pin: ErrFull when the pinned files
// would then take more than MaxPinned of the tier. Pins are never
// evicted, so without the bound one user's pins could fill the tier, and
// every other user's write would wait for room that never comes, then
// go to the next tier. A GPU load's pin (SetPinned) is not bounded: it
// ends with the load.
func (t *Tier) PinWithin(key format.Key) error {
	found, fits := t.idx.PinWithin(key)
	switch {
	case !found:
		return fmt.Errorf("memory tier: %s: %w", key, tier.ErrNotFound)
	case !fits:
		return fmt.Errorf("memory tier: %s: pinned files take %d bytes, the most pins may keep: %w", key, t.idx.Pinned(), tier.ErrFull)
	}
	return nil
}

// Pinned reports whether key is pinned (false if absent).
func (t *Tier) Pinned(key format.Key) bool { p, _ := t.idx.Flags(key); return p }

// Dirty reports whether key is dirty (false if absent).
func (t *Tier) Dirty(key format.Key) bool { _, d := t.idx.Flags(key); return d }

// EvictClean removes least recently used files that are neither dirty nor
// pinned until Room() >= need or nothing evictable is left. It returns the
// bytes freed and the keys removed.
func (t *Tier) EvictClean(need int64) (freed int64, evicted []format.Key) {
	if err := t.enter(); err != nil {
		return 0, nil
	}
	defer t.life.RUnlock()
	for _, e := range t.idx.EvictClean(need) {
		if err := t.drop(e); err != nil {
			t.log.Warn("memory tier: evict", "key", e.Key(), "err", err)
		}
		freed += e.Size
		evicted = append(evicted, e.Key())
	}
	return freed, evicted
}
