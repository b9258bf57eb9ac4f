package dir

import (
	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/tiers/index"
	"github.com/ucmfs/ucmfs/tiers/tier"
)

// A directory of a files model moved on a shared tier (mv d1 d2 on one
// host): one rename(2) of the directory on the share, so that every
// other host's listing finds d1 whole or d2 whole, never some files
// under each (before, the store moved the files one by one there too).
// The caller (tiers.Stack.RenameTreeDirOnShare) made the share hold
// every file beneath the directory first.

// RenameTreeDir renames the directory from of model's tree to to on a
// shared tier (to's parent is a directory there; to is nothing or an
// empty directory) and takes the index's Files beneath from out of the
// index: it returns their entries, which the caller adopts under their
// new names once the move is over on the other tiers (AdoptMoved).
// ErrNotFound when the share has no from; a private tier does nothing.
func (t *Tier) RenameTreeDir(model, from, to string) ([]*index.Entry, error) {
	sd := t.sharedDir()
	if sd == nil {
		return nil, nil
	}
	err := t.do("rename", func() error {
		if err := t.fs.MkdirAll(treeDirPath(model, parentDir(to)), 0o755); err != nil {
			return tier.OSErr("mkdir", err)
		}
		if err := t.fs.Rename(model+"/"+from, model+"/"+to, 0); err != nil {
			return tier.OSErr("rename", err)
		}
		return nil
	}, nil)
	if err != nil {
		return nil, err
	}
	var moved []*index.Entry
	for _, k := range sd.treeDirKeys(model, from, true) {
		if e, ok := t.idx.Remove(k); ok {
			moved = append(moved, e)
		}
	}
	sd.forgetTreeChecks(model)
	t.dirs.ForgetTree(model + "/" + from)
	sd.madeTreeDir(model, to)
	return moved, nil
}

// AdoptMoved records, in a shared tier's index, the Files of entries
// (RenameTreeDir's) under their new keys: rename maps a key to its new
// one. A private tier does nothing.
func (t *Tier) AdoptMoved(entries []*index.Entry, rename func(format.Key) format.Key) {
	if t.sharedDir() == nil {
		return
	}
	for _, e := range entries {
		info := tier.InfoOf(e)
		info.Key = rename(info.Key)
		if !t.idx.Has(info.Key) {
			t.adoptFound(tier.NewEntry(info))
		}
	}
}

// parentDir is the parent of the directory rel of a tree ("" at the top).
func parentDir(rel string) string {
	p, _ := format.SplitFilePath(rel)
	return p
}

// treeDirPath is the path of the directory rel ("": the top) of model's
// tree in the tier.
func treeDirPath(model, rel string) string {
	if rel == "" {
		return model
	}
	return model + "/" + rel
}
