package vfs

import (
	"fmt"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/layout/registry"
	"github.com/ucmfs/ucmfs/store"
)

// What a lookup of a staging name, a rename and an unlink mean in a
// shard directory (fs/shard.go serves the requests by them), and a mkdir
// and an rmdir of a shard directory at a model's root
// (fs/model_layouts.go, fs/raw_shard.go).

// Staging returns the staging file name is in the shard for a caller of
// uid, or nil. A file being written under its final name is never found
// by name: no process, its writer included, reads or stats a block
// before it is published (a second descriptor of it comes from a create
// by the same process, see store.Writes.Begin).
func (sh Shard) Staging(st *store.Store, name string, uid uint32) *store.Draft {
	if !st.Writes().Named(sh.Model, sh.Dir, name) {
		return nil
	}
	key, staging, err := sh.ParseName(name)
	if err != nil || !staging {
		return nil
	}
	return st.Writes().Staging(key, name, uid)
}

// RenameTarget is the key of newName, the name a rename in the shard
// gives its staging file w (named name): the final name w stands for,
// else an error wrapping format.ErrName. An exchange is
// store.ErrImmutable; with noReplace (RENAME_NOREPLACE) a published key
// is ErrExists.
func (sh Shard) RenameTarget(st *store.Store, w *store.Draft, name, newName string, exchange, noReplace bool) (format.Key, error) {
	key, err := sh.Key(newName)
	if err == nil && key != w.Key() {
		err = fmt.Errorf("%w: staging file %s publishes as %s, not %s", format.ErrName, name, w.Key().FileName(), newName)
	}
	switch {
	case err != nil:
		return key, err
	case exchange:
		return key, fmt.Errorf("exchange: %w", store.ErrImmutable)
	case noReplace && st.Tiers().Has(key):
		return key, ErrExists
	}
	return key, nil
}

// UnlinkPublished removes the published block or sidecar key from every
// tier (after the GPU loads of the block: RemovePublished); a block's
// sidecar goes with it, and its hits are forgotten: side is that
// sidecar, when key's layout gives it one (hasSide).
func UnlinkPublished(st *store.Store, key format.Key) (side format.Key, hasSide bool, err error) {
	if err := RemovePublished(st, key); err != nil {
		return format.Key{}, false, err
	}
	side, hasSide = registry.Of(key).Sidecar(key)
	if hasSide {
		st.ForgetHits(side, false)
	}
	return side, hasSide, nil
}

// MkdirHexShard is a mkdir of name in a ucmb model: the shard
// directories always exist (ErrExists), nothing else may be made there
// (store.ErrImmutable).
func MkdirHexShard(name string) error {
	if _, ok := format.ParseShard(name); ok {
		return ErrExists
	}
	return store.ErrImmutable
}

// RmdirHexShard is an rmdir of name in ucmb model model: of an empty
// shard directory it succeeds and changes nothing (shard directories are
// virtual and keep being listed); this is what lets rm -r drop a model.
// A shard that holds files: store.ErrNotEmpty; no shard: ErrNoEntry.
func RmdirHexShard(st *store.Store, model, name string) error {
	sh, ok := format.ParseShard(name)
	if !ok {
		return ErrNoEntry
	}
	return notEmpty(len(st.Tiers().ShardKeys(model, sh)))
}

// notEmpty refuses the rmdir of a shard that holds n files.
func notEmpty(n int) error {
	if n > 0 {
		return fmt.Errorf("shard still holds files: %w", store.ErrNotEmpty)
	}
	return nil
}

// MkdirRawShard is a mkdir of name in ucm-posix model model: the width
// of the shard directory it names. A new width is recorded
// (store.Models.AddShardWidth); a name of a width the model has exists
// already, and its mkdir succeeds too (the kernel answers EEXIST itself
// while it holds the entry; it asks only when it holds none, or a miss
// cached from before the width was recorded, and then cp and rsync take
// EEXIST for an error). Anything else is refused (format.ErrName).
func MkdirRawShard(st *store.Store, model, name string) (int, error) {
	if w, ok := RawShard(st, model, name); ok {
		return w, nil
	}
	w, ok := format.ParseRawShard(name)
	if !ok {
		return 0, fmt.Errorf("%w: %q is not a shard directory (data or 1..4 lowercase hex characters)", format.ErrName, name)
	}
	return w, st.Models().AddShardWidth(model, w)
}

// RmdirRawShard is an rmdir of name in ucm-posix model model: it removes
// nothing, an empty shard directory stays (its width is the model's);
// one that holds blocks is store.ErrNotEmpty; no shard: ErrNoEntry.
func RmdirRawShard(st *store.Store, model, name string) error {
	w, ok := RawShard(st, model, name)
	if !ok {
		return ErrNoEntry
	}
	return notEmpty(len(MadeShard(model, name, w).Keys(st)))
}
