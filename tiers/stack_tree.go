package tiers

import (
	"errors"
	"fmt"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/tiers/dir"
	"github.com/ucmfs/ucmfs/tiers/rootfs"
	"github.com/ucmfs/ucmfs/tiers/tier"
	"golang.org/x/sys/unix"
)

// The directories of a tree of Files (layout_tree.go). A directory an
// engine makes is made at once in every directory tier that is up, with
// the model's tree mark, so it is there after a restart even while it
// holds no file; the memory tier makes a File's directories as it takes
// the File. The store keeps the directories it knows this run and asks
// the first directory tier about the others.

// MakeDir makes the directory rel (a path format.ValidateFilePath
// accepts) of model's tree in every directory tier that is up. An error
// is the first tier's that failed.
func (s *Stack) MakeDir(model, rel string) error {
	if err := treePath(model, rel); err != nil {
		return err
	}
	var first error
	for _, d := range s.dirs {
		if d.Health() == Down {
			continue
		}
		if err := d.MakeTreeDir(model, rel); err != nil && first == nil {
			first = fmt.Errorf("%s tier: %w", d.Name(), err)
		}
	}
	return first
}

// RemoveDir removes the directory rel of model's tree from every tier
// (the caller checked that it holds no File). The tiers' temp files left
// in it go too; a tier where it is missing is fine.
func (s *Stack) RemoveDir(model, rel string) error {
	if err := treePath(model, rel); err != nil {
		return err
	}
	s.mem.SettleAll() // a removed file still in it must not keep it
	if !s.copies.wait(model, rel) {
		s.log.Warn("directory removed while a copy into it still runs", "model", model, "dir", rel)
	}
	roots := []rootfs.FS{s.mem.Root()}
	for _, d := range s.dirs {
		roots = append(roots, d.Root())
	}
	// What each tier knew of it goes too: a directory made again at
	// its name is not durable until its parent is fsynced again (the
	// store soak's "older", seed 1796676393920129247).
	s.mem.ForgetTreeDir(model, rel)
	for _, d := range s.dirs {
		d.ForgetTreeDir(model, rel)
	}
	var first error
	dir := model + "/" + rel
	for _, root := range roots {
		err := root.Rmdir(dir)
		if errors.Is(err, unix.ENOTEMPTY) {
			removeTempFiles(root, dir)
			err = root.Rmdir(dir)
		}
		if err != nil && !errors.Is(err, unix.ENOENT) && first == nil {
			first = tier.OSErr("rmdir", err)
		}
	}
	return first
}

// TreeDirOnDisk reports whether a directory tier has the directory rel of
// model's tree (one made in an earlier run, or by another host on a
// shared tier): every tier is asked, the first first. (Only the first was:
// a directory another host made on the share behind a private tier was
// ENOENT here, and every file in it with it.)
func (s *Stack) TreeDirOnDisk(model, rel string) bool {
	if treePath(model, rel) != nil {
		return false
	}
	parent, _ := format.SplitFilePath(rel)
	for _, d := range s.dirs {
		if d.NoSubdirs(model, parent) {
			continue
		}
		var st unix.Stat_t
		if d.Root().Stat(model+"/"+rel, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
			return true
		}
	}
	return false
}

// TreeSubdirs lists the subdirectories of the directory rel ("": the
// model's root) of model's tree in the directory tiers, every one of
// them (a name may come more than once: the caller sorts and compacts).
func (s *Stack) TreeSubdirs(model, rel string) []string {
	if format.ValidateModel(model) != nil || rel != "" && format.ValidateFilePath(rel) != nil {
		return nil
	}
	dir := model
	if rel != "" {
		dir += "/" + rel
	}
	var out []string
	for _, d := range s.dirs {
		out = append(out, d.TreeSubdirs(dir)...)
	}
	return out
}

// treePath checks model and the directory path rel.
func treePath(model, rel string) error {
	if err := format.ValidateModel(model); err != nil {
		return err
	}
	return format.ValidateFilePath(rel)
}

// removeTempFiles removes the tiers' temp files in the directory rel
// beneath r.
func removeTempFiles(r rootfs.FS, rel string) {
	names, err := r.ReadDirAll(rel)
	if err != nil {
		return
	}
	for _, name := range names {
		if dir.IsTempName(name) {
			_ = r.Unlink(rel + "/" + name)
		}
	}
}

// MarkTree marks model's directory in every directory tier that is up as
// a tree of Files (a model given the files layout while empty).
func (s *Stack) MarkTree(model string) error {
	if err := format.ValidateModel(model); err != nil {
		return err
	}
	var first error
	for _, d := range s.dirs {
		if d.Health() == Down {
			continue
		}
		if err := d.MarkTree(model); err != nil && first == nil {
			first = fmt.Errorf("%s tier: %w", d.Name(), err)
		}
	}
	return first
}

// IsTree reports whether a directory tier holds model as a tree of Files
// (its directory carries the tree mark).
func (s *Stack) IsTree(model string) bool {
	if format.ValidateModel(model) != nil {
		return false
	}
	for _, d := range s.dirs {
		if tier.IsTree(d.Root(), model) {
			return true
		}
	}
	return false
}
