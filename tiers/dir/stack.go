package dir

import (
	"fmt"
	"log/slog"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/tiers/index"
	"github.com/ucmfs/ucmfs/tiers/tier"
)

// What the stack asks of a directory tier beyond the Tier interface: its
// index (the stack plans from it), its operations on its root under the
// tier's timeout, and what depends on who else uses its directory (the
// tier's dirSharing, asked here so that the stack never is). The stack
// goes through these methods only; the tier's fields are its own.

// Index is the tier's index of its files: what the stack reads residency,
// sizes and versions from, and checks a copy's source entry against.
func (t *Tier) Index() *index.Index { return t.idx }

// Do runs fn, an operation named op on the tier's root (Root), as the
// tier runs its own: on the caller's goroutine or detached, under the
// tier's timeout, its outcome kept in the tier's health (health.go).
func (t *Tier) Do(op string, fn func() error) error { return t.do(op, fn, nil) }

// Logger is the tier's logger.
func (t *Tier) Logger() *slog.Logger { return t.log }

// Inline reports whether the tier's operations run on the caller's
// goroutine (a local disk; see do): only such a tier stages files on disk.
func (t *Tier) Inline() bool { return t.inline }

// DirectIO reports whether O_DIRECT writes are on (DisableDirect turns
// them off).
func (t *Tier) DirectIO() bool { return t.direct.Load() }

// InPlace reports whether reads may use the tier's file itself (a shared
// file may vanish under an open descriptor: it is copied).
func (t *Tier) InPlace() bool { return t.share.inPlace() }

// Has reports whether the tier holds key, for batch lookups: no syscall
// while the index knows (call Revalidate first).
func (t *Tier) Has(key format.Key) bool { return t.share.has(key) }

// Lookup is Stat once key's shard was revalidated: the index only, or for
// a shared tier the disk for a key it lacks; a miss is false, no error
// built.
func (t *Tier) Lookup(key format.Key) (tier.Info, bool) { return t.share.get(key) }

// Revalidate makes the index of key's shard at most a TTL old (nothing to
// do for a private tier).
func (t *Tier) Revalidate(key format.Key) { t.share.revalidate(key) }

// MayEvict reports whether key may be evicted now (a shared file used by
// some daemon lately may not).
func (t *Tier) MayEvict(key format.Key) bool { return t.share.mayEvict(key) }

// RecordOwner records, beside the lock of a private tier, this daemon's
// pid and FUSE connection (lock_stuck.go); a shared tier has no lock.
func (t *Tier) RecordOwner(conn uint32) error {
	if err := t.share.recordOwner(conn); err != nil {
		return fmt.Errorf("%s tier: %s: %w", t.kind, t.root, err)
	}
	return nil
}

// OnRootLost sets what the tier calls with the keys it loses when its
// root directory is lost (root.go): it returns how many it keeps.
func (t *Tier) OnRootLost(keep func([]format.Key) int) { t.onRootLost.Store(&keep) }

// MakeTreeDir makes the directory rel of model's tree (layout_tree.go)
// with the model's tree mark.
func (t *Tier) MakeTreeDir(model, rel string) error {
	return t.do("mkdir", func() error {
		if err := t.fs.MkdirAll(model+"/"+rel, 0o755); err != nil {
			return tier.OSErr("mkdir", err)
		}
		t.flat.madeDir(model)
		if sd := t.sharedDir(); sd != nil {
			sd.madeTreeDir(model, rel)
		}
		return tier.MarkTree(t.fs, model)
	}, nil)
}

// ForgetTreeDir drops what the tier knows of the directory rel of
// model's tree and beneath it (removed or renamed by the stack).
func (t *Tier) ForgetTreeDir(model, rel string) { t.dirs.ForgetTree(model + "/" + rel) }

// MarkTree makes model's directory, marked as a tree of Files.
func (t *Tier) MarkTree(model string) error {
	return t.do("mark", func() error {
		if err := t.fs.MkdirAll(model, 0o755); err != nil {
			return tier.OSErr("mkdir", err)
		}
		return tier.MarkTree(t.fs, model)
	}, nil)
}

// The files a shared tier is owed (shared_owed.go): those written back
// to a private tier while it was down. A private tier is owed none.

// Owe records key as owed to the tier, if it is shared.
func (t *Tier) Owe(key format.Key) {
	if sd := t.sharedDir(); sd != nil {
		sd.owed.add(key)
	}
}

// Owed lists the keys owed to the tier that keep takes (nil: all).
func (t *Tier) Owed(keep func(format.Key) bool) []format.Key {
	if sd := t.sharedDir(); sd != nil {
		return sd.owed.list(keep)
	}
	return nil
}

// IsOwed reports whether key is owed to the tier.
func (t *Tier) IsOwed(key format.Key) bool {
	if sd := t.sharedDir(); sd != nil {
		return sd.owed.has(key)
	}
	return false
}

// Paid forgets key as owed.
func (t *Tier) Paid(key format.Key) {
	if sd := t.sharedDir(); sd != nil {
		sd.owed.done(key)
	}
}

// WatchGone has a shared tier tell gone the keys it finds removed by
// another daemon, and replaced the Files it finds replaced by another
// host; a private tier finds none.
func (t *Tier) WatchGone(gone, replaced func([]format.Key)) {
	if sd := t.sharedDir(); sd != nil {
		sd.view.gone, sd.view.replaced = gone, replaced
	}
}

// AdoptTree indexes at once, on a shared tier holding model as a tree of
// Files, the files of that tree its index does not hold yet
// (shared_scan.go); nothing on a private tier.
func (t *Tier) AdoptTree(model string) {
	if sd := t.sharedDir(); sd != nil && tier.IsTree(t.fs, model) {
		sd.adoptTree(model)
	}
}
