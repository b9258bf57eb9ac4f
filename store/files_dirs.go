package store

import (
	"fmt"
	"slices"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/layout"
	"github.com/ucmfs/ucmfs/layout/registry"
	"github.com/ucmfs/ucmfs/tiers"
)

// The store's steps of a model whose layout is a tree of Files
// (layout.Layout.Tree; layout/files says the layout's rules): its
// directories (a directory exists when it was made, kept in every
// directory tier, or holds a file: the store knows those of this run,
// treeSet, and asks the first directory tier about older ones), their
// listing and fsync.

// ReservedFileName reports whether name, in the directory dir of a files
// model ("" its root), is a name no file may take: at the root, the
// records the tiers keep in every model directory beside the engine's
// files (tiers.ReservedInModel: the settings record, its temp files, the
// tree mark). A file under such a name would be written over the model's
// settings on every tier (its owner, mode, quota and layout lost at the
// next start) or over the mark.
func ReservedFileName(dir, name string) bool {
	return dir == "" && tiers.ReservedInModel(name)
}

// adoptTree gives a model whose tier directory is a tree of Files (an
// engine's directory taken as a tier, or a files model of an earlier run
// whose record is gone) the files layout when it has no record.
func (s *Store) adoptTree(model string) {
	err := s.updateSettings(model, func(v *Settings) error {
		if v.Layout == "" {
			v.Layout = registry.Find(layout.Layout.Tree).Name()
		}
		return nil
	})
	if err != nil {
		s.log.Warn("files layout not recorded", "model", model, "err", err)
	}
}

// FilesDir reports whether dir ("" is the model's root) is a directory of
// the files model.
func (s *Store) FilesDir(model, dir string) bool {
	if dir == "" {
		return true
	}
	if !s.trees.known(model, dir) && !s.stack.TreeDirOnDisk(model, dir) {
		return false
	}
	if s.filesDirGone(model, dir) { // moved or removed on the share by another host (files_shared.go)
		return false
	}
	s.trees.add(model, dir)
	return true
}

// FilesMkdir makes the directory dir of the files model for the user
// uid: ErrExist when a directory or a file has its name, ErrNotFound when
// its parent is no directory, an error wrapping format.ErrName for a bad
// name, ErrNoSpace or ErrQuota past the bounds on directories
// (dir_tree.go).
func (s *Store) FilesMkdir(model, dir string, uid uint32) error {
	if err := format.ValidateFilePath(dir); err != nil {
		return err
	}
	if s.Stopped() {
		return fmt.Errorf("shutting down: %w", ErrStopped)
	}
	parent, _ := format.SplitFilePath(dir)
	switch {
	case !s.FilesDir(model, parent):
		return fmt.Errorf("%s/%s: %w", model, parent, ErrNotFound)
	case s.FilesDir(model, dir), s.stack.HasKey(format.FileKey(model, dir)):
		return fmt.Errorf("%s/%s: %w", model, dir, ErrExist)
	}
	if err := s.dropLeftBeneath(model, dir); err != nil {
		return err // files_move_left.go
	}
	if err := s.trees.claim(uid); err != nil {
		return err
	}
	if err := s.stack.MakeDir(model, dir); err != nil {
		s.trees.unclaim(uid)
		return err
	}
	s.trees.made(model, dir, uid)
	return nil
}

// FilesRmdir removes the empty directory dir of the files model:
// ErrNotEmpty while it holds a directory, a published file or one being
// written; ErrNotFound when it is no directory.
func (s *Store) FilesRmdir(model, dir string) error {
	if dir == "" || !s.FilesDir(model, dir) {
		return fmt.Errorf("%s/%s: %w", model, dir, ErrNotFound)
	}
	subdirs, files := s.FilesList(model, dir)
	if len(subdirs) > 0 || len(files) > 0 || s.writes.inShard(model, dir) {
		return fmt.Errorf("%s/%s: %w", model, dir, ErrNotEmpty)
	}
	if err := s.stack.RemoveDir(model, dir); err != nil {
		return err
	}
	s.trees.remove(model, dir)
	s.dropDirPin(model, dir)
	return nil
}

// DirtyFilesIn returns the files of the directory dir of the files model
// that are in memory only, not yet on a persistent tier, without listing
// the others (a directory's fsync: a flat one may hold 10^5 files).
func (s *Store) DirtyFilesIn(model, dir string) []format.Key {
	return filesIn(s.stack.DirtyShardKeys(model, format.FileShard(dir)), dir)
}

// uniqueFiles keeps the first key of each file of files (several tiers
// hold copies of a file under its one key, whose id is its name's hash),
// in files' own array and order.
func uniqueFiles(files []format.Key) []format.Key {
	seen := make(map[format.ID]struct{}, len(files)/2)
	out := files[:0]
	for _, k := range files {
		if _, dup := seen[k.ID]; dup {
			continue
		}
		seen[k.ID] = struct{}{}
		out = append(out, k)
	}
	return out
}

// filesIn keeps the Files of keys that are in the directory dir (keys of
// the directory's shard hold other directories' files too), in keys'
// own array.
func filesIn(keys []format.Key, dir string) []format.Key {
	files := keys[:0]
	for _, k := range keys {
		if registry.Of(k).Tree() && k.ShardDir() == dir {
			files = append(files, k)
		}
	}
	return files
}

// FilesList lists the directory dir of the files model: its
// subdirectories' names, sorted, and its published files, once each, in
// the tiers' index order (a directory's order, as ext4's hash order, is
// no promise of POSIX; sorting 10^5 names took 100-200 ms, more than the
// rest of the listing). Its cost is that of the files whose directories
// share dir's shard (format.FileShard), not of the model.
func (s *Store) FilesList(model, dir string) (subdirs []string, files []format.Key) {
	if s.filesDirGone(model, dir) {
		return nil, nil
	}
	keys, repeats := s.stack.AppendShardKeys(model, format.FileShard(dir), nil)
	files = filesIn(keys, dir)
	if repeats {
		files = uniqueFiles(files)
	}
	return s.FilesSubdirs(model, dir), files
}

// FilesSubdirs are the names of the subdirectories of directory dir of
// the files model model ("" its root), sorted: those made through this
// mount and those the first directory tier holds.
func (s *Store) FilesSubdirs(model, dir string) []string {
	subdirs := append(s.trees.children(model, dir), s.stack.TreeSubdirs(model, dir)...)
	slices.Sort(subdirs)
	return slices.Compact(subdirs)
}
