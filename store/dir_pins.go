package store

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/layout/registry"
	"github.com/ucmfs/ucmfs/tiers"
)

// Directory pins of files models (docs/xattrs.md, "Pinning a
// directory"): user.ucm.pinned=1 on a directory of a files model (its
// root included) keeps every file beneath it in the memory tier, the
// files there now and those published there later; 0 lets them go.
//
//   - The pinned directories are kept in the model's settings record
//     (Settings.PinnedDirs), so a restart keeps them: at mount the files
//     beneath are brought back into memory in the background.
//   - The memory tier pins a file as it enters (tiers.Stack.SetPinRule
//     with dirPinned), so a file published or promoted beneath a pinned
//     directory is never evicted, with no walk.
//   - A pin promotes and pins every file beneath first, and is recorded
//     only when all fit: ErrFull (ENOSPC) leaves nothing pinned by it.
//   - A file's pin is one flag: unpinning a directory clears it on every
//     file beneath that no other pinned directory holds, a pin set on one
//     of those files by its own attribute included.
//   - A model has at most MaxDirPins pinned directories; rmdir of a pinned
//     directory drops its pin.

// MaxDirPins bounds the pinned directories of one model.
const MaxDirPins = 256

// dirPinTable is the pinned directories of every files model. mu is a
// leaf: dirPinned reads it under the memory tier's index lock.
type dirPinTable struct {
	mu  sync.RWMutex
	m   map[string][]string // model -> pinned directories ("" is its root)
	ops sync.Mutex          // serializes the changes
}

// set replaces model's pinned directories.
func (t *dirPinTable) set(model string, dirs []string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(dirs) == 0 {
		delete(t.m, model)
		return
	}
	if t.m == nil {
		t.m = make(map[string][]string)
	}
	t.m[model] = slices.Clone(dirs)
}

// list returns model's pinned directories.
func (t *dirPinTable) list(model string) []string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return slices.Clone(t.m[model])
}

// covers reports whether a pinned directory of model holds the file at
// path.
func (t *dirPinTable) covers(model, path string) bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	for _, d := range t.m[model] {
		if beneath(path, d) {
			return true
		}
	}
	return false
}

// beneath reports whether path lies in directory dir ("" is the root).
func beneath(path, dir string) bool {
	return dir == "" || (len(path) > len(dir) && path[len(dir)] == '/' && strings.HasPrefix(path, dir))
}

// dirPinned is the memory tier's pin rule (tiers.Stack.SetPinRule): k is
// a File beneath a pinned directory.
func (s *Store) dirPinned(k format.Key) bool {
	return registry.Of(k).Tree() && s.dirPins.covers(k.Model, k.Name)
}

// DirPinned reports whether dir ("" is the root) of the files model is
// pinned.
func (s *Store) DirPinned(model, dir string) bool {
	return slices.Contains(s.dirPins.list(model), dir)
}

// SetDirPin pins (every file beneath dir kept in memory, now and later)
// or unpins dir of the files model. Errors: ErrNotFound for no such
// directory, ErrInvalid for a model of another layout, ErrFull when the
// files beneath do not fit in memory (nothing is left pinned by this
// call) or the model has MaxDirPins pinned directories.
func (s *Store) SetDirPin(model, dir string, pin bool) error {
	if !s.Models().LayoutOf(model).Tree() {
		return fmt.Errorf("%s: a directory pin needs the files layout: %w", model, ErrInvalid)
	}
	if !s.FilesDir(model, dir) {
		return fmt.Errorf("%s/%s: %w", model, dir, ErrNotFound)
	}
	t := &s.dirPins
	t.ops.Lock()
	defer t.ops.Unlock()
	cur := t.list(model)
	had := slices.Contains(cur, dir)
	if !pin {
		if !had {
			return nil
		}
		next := slices.DeleteFunc(slices.Clone(cur), func(d string) bool { return d == dir })
		if err := s.recordDirPins(model, next); err != nil {
			return err
		}
		t.set(model, next)
		s.unpinTree(model, dir)
		return nil
	}
	if had {
		return s.pinTree(model, dir) // again: files that came since from a shared tier
	}
	if len(cur) >= MaxDirPins {
		return fmt.Errorf("%s: %d pinned directories already: %w", model, len(cur), ErrFull)
	}
	next := append(cur, dir)
	t.set(model, next) // first, so that files published meanwhile enter pinned
	err := s.pinTree(model, dir)
	if err == nil {
		err = s.recordDirPins(model, next)
	}
	if err != nil { // nothing stays pinned by this call
		t.set(model, cur)
		s.unpinTree(model, dir)
	}
	return err
}

// recordDirPins writes model's pinned directories to its settings record.
func (s *Store) recordDirPins(model string, dirs []string) error {
	return s.updateSettings(model, func(v *Settings) error {
		v.PinnedDirs = slices.Clone(dirs)
		return nil
	})
}

// pinTree brings every file beneath dir into memory and pins it there.
func (s *Store) pinTree(model, dir string) error {
	return s.walkTree(model, dir, func(k format.Key) error {
		err := s.SetUserPin(k, true)
		if errors.Is(err, tiers.ErrNotFound) {
			return nil // removed meanwhile
		}
		return err
	})
}

// unpinTree clears the pin of every file beneath dir that no pinned
// directory of the table holds (dir is out of it already).
func (s *Store) unpinTree(model, dir string) {
	_ = s.walkTree(model, dir, func(k format.Key) error {
		if s.dirPins.covers(model, k.Name) {
			return nil
		}
		if err := s.SetUserPin(k, false); err != nil && !errors.Is(err, tiers.ErrNotFound) {
			s.log.Warn("directory unpin", "file", k.String(), "err", err)
		}
		return nil
	})
}

// walkTree calls fn for every published file beneath dir, depth first,
// until fn fails.
func (s *Store) walkTree(model, dir string, fn func(format.Key) error) error {
	subdirs, files := s.FilesList(model, dir)
	for _, k := range files {
		if err := fn(k); err != nil {
			return err
		}
	}
	for _, sub := range subdirs {
		if err := s.walkTree(model, format.JoinFilePath(dir, sub), fn); err != nil {
			return err
		}
	}
	return nil
}

// applyDirPins takes model's recorded pinned directories at mount and
// brings the files beneath them into memory in the background.
func (s *Store) applyDirPins(model string, dirs []string) {
	if len(dirs) == 0 {
		return
	}
	s.dirPins.set(model, dirs)
	go func() {
		for _, d := range dirs {
			err := s.pinTree(model, d)
			select {
			case <-s.stop:
				return // the store closed under the walk: nothing to say
			default:
			}
			if err != nil {
				s.log.Warn("pinned directory not all in memory", "model", model, "dir", "/"+d, "err", err)
			}
		}
	}()
}

// dropDirPin forgets the pin of dir, removed (rmdir), in model's record.
func (s *Store) dropDirPin(model, dir string) {
	t := &s.dirPins
	t.ops.Lock()
	defer t.ops.Unlock()
	cur := t.list(model)
	if !slices.Contains(cur, dir) {
		return
	}
	next := slices.DeleteFunc(cur, func(d string) bool { return d == dir })
	t.set(model, next)
	if err := s.recordDirPins(model, next); err != nil {
		s.log.Warn("pin of a removed directory not dropped from the record", "model", model, "dir", "/"+dir, "err", err)
	}
}

// checkedPins is the pinned directories of model's record that name a
// directory within the model ("" or a clean path: format.ValidateFilePath),
// the first MaxDirPins of them: the record is read from the tiers, where a
// damaged file or whoever writes a shared tier may have put anything. The
// others are logged, in one line.
func (s *Store) checkedPins(model string, dirs []string) []string {
	kept := make([]string, 0, min(len(dirs), MaxDirPins))
	var first error
	for _, d := range dirs {
		err := error(nil)
		if d != "" {
			err = format.ValidateFilePath(d)
		}
		if err == nil && len(kept) == MaxDirPins {
			err = fmt.Errorf("more than %d pinned directories", MaxDirPins)
		}
		if err != nil {
			first = cmp.Or(first, err)
			continue
		}
		kept = append(kept, d)
	}
	if first != nil {
		s.log.Warn("pinned directories of the record refused: not within the model, or too many", "model", model, "refused", len(dirs)-len(kept), "err", first)
	}
	return kept
}
