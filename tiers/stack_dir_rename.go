package tiers

import (
	"fmt"
	"strings"
	"sync"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/layout/registry"
	"github.com/ucmfs/ucmfs/tiers/index"
	"github.com/ucmfs/ucmfs/tiers/tier"
)

// A directory of a files model moved on a stack with a shared tier
// (store.Store.MoveFilesDir): the share takes it in one rename(2)
// (RenameTreeDirOnShare), then memory and the private tiers move its
// files one by one under their indexes, as before. While they do, the
// shared tiers are left out of what that per-file move does to the
// files beneath either name (shareMoves.held): the link or copy of a
// file under its new name would supersede the share's file there
// (unlink it), write it back or owe it again, and the removal of its old
// name would unlink nothing there now. Another host lists the share
// whole at either name.

// shareMoves is the directories being moved on the shared tiers: keys
// "model/dir/", counted.
type shareMoves struct {
	mu sync.Mutex
	m  map[string]int
}

// add holds the prefixes ps.
func (h *shareMoves) add(ps ...string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil {
		h.m = make(map[string]int)
	}
	for _, p := range ps {
		h.m[p]++
	}
}

// done releases the prefixes ps.
func (h *shareMoves) done(ps ...string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, p := range ps {
		if h.m[p]--; h.m[p] <= 0 {
			delete(h.m, p)
		}
	}
}

// held reports whether k is a File beneath a directory being moved.
func (h *shareMoves) held(k format.Key) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.m) == 0 || !registry.Of(k).Tree() {
		return false
	}
	for p := range h.m {
		if strings.HasPrefix(k.Model+"/"+k.Name, p) {
			return true
		}
	}
	return false
}

// skipShared reports whether d is a shared tier that the per-file move
// of k, beneath a directory moved on the share, leaves alone.
func (s *Stack) skipShared(d tier.Lower, k format.Key) bool {
	return d.Shared() && s.shareMoves.held(k)
}

// RenameTreeDirOnShare renames the directory from of model's tree to to
// on every shared tier (dir.Tier.RenameTreeDir), after the caller made
// the share hold every file beneath from (FlushKeys). Until done is
// called, the stack leaves the shared tiers out of what it does to the
// files beneath from and to; done records the moved files in the shared
// tiers' indexes under their new names, or with keep false (the move
// failed on the other tiers) renames the directory back. It does nothing (done is a no-op)
// on a stack with no shared tier; a shared tier that is down fails it
// (ErrStalled) before anything moved. ok reports whether a shared tier
// renamed.
func (s *Stack) RenameTreeDirOnShare(model, from, to string) (done func(keep bool), ok bool, err error) {
	if err := treePath(model, from); err != nil {
		return func(bool) {}, false, err
	}
	if err := treePath(model, to); err != nil {
		return func(bool) {}, false, err
	}
	var shared []tier.Lower
	for _, d := range s.dirs {
		if !d.Shared() {
			continue
		}
		if d.Health() == Down {
			return func(bool) {}, false, fmt.Errorf("%s/%s: %w", model, from, d.Stalled("rename"))
		}
		shared = append(shared, d)
	}
	if len(shared) == 0 {
		return func(bool) {}, false, nil
	}
	held := []string{model + "/" + from + "/", model + "/" + to + "/"}
	s.shareMoves.add(held...)
	moved := make([][]*index.Entry, len(shared))
	for i, d := range shared {
		es, err := d.RenameTreeDir(model, from, to)
		if err != nil {
			s.renameBack(model, from, to, shared[:i], moved)
			s.shareMoves.done(held...)
			return func(bool) {}, false, fmt.Errorf("%s tier: %w", d.Name(), err)
		}
		moved[i] = es
	}
	rename := func(k format.Key) format.Key {
		return format.FileKey(model, to+strings.TrimPrefix(k.Name, from))
	}
	return func(keep bool) {
		if keep {
			for i, d := range shared {
				d.AdoptMoved(moved[i], rename)
			}
		} else {
			s.renameBack(model, from, to, shared, moved)
		}
		s.shareMoves.done(held...)
	}, true, nil
}

// renameBack renames to back to from on the shared tiers, whose moved
// files' entries moved holds: a move that failed leaves the names as
// they were, as a failed rename(2).
func (s *Stack) renameBack(model, from, to string, shared []tier.Lower, moved [][]*index.Entry) {
	for j, d := range shared {
		if _, err := d.RenameTreeDir(model, to, from); err != nil {
			s.log.Warn("directory move undone: not renamed back on the share", "model", model, "from", to, "to", from, "tier", d.Name(), "err", err)
			continue
		}
		d.AdoptMoved(moved[j], func(k format.Key) format.Key { return k })
	}
}
