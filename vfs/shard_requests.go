package vfs

import (
	"fmt"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/layout/registry"
	"github.com/ucmfs/ucmfs/store"
)

// What a lookup of a staging name, a rename and an unlink mean in a
// shard directory (fs/shard.go serves the requests by them).

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
