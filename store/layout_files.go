package store

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/tiers"
)

// The files layout (docs/semantics.md, "The files layout"): a model
// directory an engine fills as it would a local disk, with any tree of
// names (vLLM's and llm-d's fs tier, LMCache, SGLang, Mooncake write a
// file per block, under a temporary name, renamed). Every published
// regular file is a File (format/files.go): raw, tiered, written back,
// checked by CRC-32C and evicted like a block. What is ucmfs's here:
//
//   - A directory exists when it was made (mkdir, kept in every directory
//     tier, so it outlives a restart), or holds a file. The store knows
//     those of this run (treeSet) and asks the first directory tier about
//     older ones.
//   - A file a process creates is private to it until it publishes: at
//     the creating process's last close, fsync, or rename. A staging name
//     (IsStagingName: `*.tmp`, `*.tmp.*`, rsync's `.<name>.XXXXXX`) is a
//     temporary file: it publishes only at its rename, under the name it
//     is renamed to, so the temporary name itself never reaches a tier.
//   - Publishing under a name that is published replaces the file (the
//     engines' rename over, or a create with O_TRUNC): readers that have
//     the old one open keep its bytes.
//   - rename of a published file moves it (Writes.Move); rename of a
//     directory moves each file beneath it (MoveFilesDir), up to bounds
//     past which it is EXDEV: tools (mv) copy instead.
//   - an engine's own files (KeptFile: '.' names, configs, locks, logs)
//     are never evicted.

// keptExts are the extensions of an engine's own small files: its run
// config, locks, logs, pid files.
var keptExts = []string{".json", ".lock", ".log", ".pid", ".yaml", ".yml", ".conf", ".config", ".toml", ".txt"}

// KeptFile reports whether the File k is one of an engine's own files
// rather than a KV block: its name starts with '.' (lock and probe files,
// UCM's GC files), or ends in one of keptExts. Such a file is never
// dropped by eviction (tiers.Stack.SetKeep): losing a block is a miss
// the engine recomputes, losing its config or a lock file another process
// holds is not. Everything else about it is a block's: it is tiered,
// checked and counted.
func KeptFile(k format.Key) bool {
	if k.Kind != format.File {
		return false
	}
	_, name := format.SplitFilePath(k.Name)
	if strings.HasPrefix(name, ".") {
		return true
	}
	for _, ext := range keptExts {
		if strings.HasSuffix(name, ext) {
			return true
		}
	}
	return false
}

// filesLayout is LayoutFiles.
type filesLayout struct{}

func (filesLayout) Name() string     { return LayoutFiles }
func (filesLayout) Replaces() bool   { return true }
func (filesLayout) Headerless() bool { return true }

// BlockKey: a files model names its files by path, not by block id; an
// id names no file there.
func (filesLayout) BlockKey(_ *Store, model string, id format.ID) format.Key {
	return format.Key{Model: model, ID: id, Kind: format.File}
}

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

// IsStagingName reports whether name is a temporary name in a files
// model: it ends in ".tmp" (vLLM's and llm-d's <final>_<rand>.tmp,
// LMCache's <name>.tmp, UCM's <id>.tmp), holds ".tmp." (SGLang's
// <final>.tmp.<pid>.<tid>.<uuid>, UCM's .ucm_gc.config.tmp.<host>...), or
// is rsync's .<name>.XXXXXX, whose six letters and digits (mkstemp's)
// hold a digit or a capital (so that .ucm_gc.config is a final name), or
// is a ucmfs tier's own temp name (tiers.IsTempName: another daemon whose
// tier is this model writes back through it: its fsync before the
// rename must not publish the temp name). A temporary name taken for a
// final one still works: it publishes at its close and its rename moves
// it.
func IsStagingName(name string) bool {
	if strings.HasSuffix(name, ".tmp") || strings.Contains(name, ".tmp.") || tiers.IsTempName(name) {
		return true
	}
	if len(name) < 9 || name[0] != '.' {
		return false
	}
	i := strings.LastIndexByte(name, '.')
	if i < 2 || len(name)-i-1 != 6 {
		return false
	}
	mixed := false
	for _, c := range name[i+1:] {
		switch {
		case c >= '0' && c <= '9', c >= 'A' && c <= 'Z':
			mixed = true
		case c >= 'a' && c <= 'z':
		default:
			return false
		}
	}
	return mixed
}

// adoptTree gives a model whose tier directory is a tree of Files (an
// engine's directory taken as a tier, or a files model of an earlier run
// whose record is gone) the files layout when it has no record.
func (s *Store) adoptTree(model string) {
	err := s.updateSettings(model, func(v *Settings) error {
		if v.Layout == "" {
			v.Layout = LayoutFiles
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
		if k.Kind == format.File && k.ShardDir() == dir {
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
