package dir

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/tiers/rootfs"
	"github.com/ucmfs/ucmfs/tiers/tier"
	"golang.org/x/sys/unix"
)

// A model of the files layout keeps its files in its tier directory as
// the tree its engine made (format/files.go): <model>/<any path>, byte for
// byte. Its model directory holds TreeMarkName, so that the layout walk
// (a rebuild, fsck) knows the tree from a ucmb or ucm-posix model's
// shards without the store's record: the first File a tier takes, or a
// directory made in the model (MakeDir), writes it. In a tree every
// regular file is a File, '.' names included (engines keep lock and
// config files there), except the tiers' own temp files (IsTempName: not
// any ".tmp-" name, which an engine may give its own files).

// walkTree walks the tree of model, sending each directory's files to
// w.shard with the directory's path relative to the model ("" at its
// root) in place of a shard name.
func (w *layoutWalk) walkTree(model string, halt func(string, error)) {
	var walk func(rel string)
	walk = func(rel string) {
		ents, subdirs, err := listTreeDir(w.root, model, rel)
		if err != nil {
			halt(model+"/"+rel, err)
			return
		}
		w.shard(model, rel, ents)
		for _, d := range subdirs {
			walk(format.JoinFilePath(rel, d))
		}
	}
	walk("")
}

// listTreeDir lists the directory rel of model's tree beneath r:
// its files classified (a File each, the tiers' temp files leftovers,
// anything but a regular file or a directory bad; at the model's root the
// settings record and the tree mark are left out, the settings' temp
// files are leftovers), and its
// subdirectories, both in name order.
func listTreeDir(r rootfs.FS, model, rel string) (ents []shardEntry, subdirs []string, err error) {
	dir := model
	if rel != "" {
		dir += "/" + rel
	}
	list, err := r.ReadDirStat(dir)
	if err != nil {
		return nil, nil, err
	}
	slices.SortFunc(list, func(a, b rootfs.Stat) int { return strings.Compare(a.Name, b.Name) })
	for i := range list {
		name, st := list[i].Name, &list[i].Stat_t
		if rel == "" && (name == tier.ModelMetaName || name == tier.TreeMarkName) {
			continue
		}
		leftover := IsTempName(name) || rel == "" && tier.ReservedInModel(name) // a settings write's temp file
		p := format.JoinFilePath(rel, name)
		e := shardEntry{name: name, size: st.Size, mtime: st.Mtim}
		switch {
		case st.Mode&unix.S_IFMT == unix.S_IFDIR:
			subdirs = append(subdirs, name)
			continue
		case leftover:
			e.class = leftoverEntry
		case st.Mode&unix.S_IFMT != unix.S_IFREG:
			e.class, e.why = badEntry, fmt.Errorf("%w: %s is not a regular file", format.ErrName, p)
		default:
			if e.why = format.ValidateFilePath(p); e.why != nil {
				e.class = badEntry
			} else {
				e.id, e.kind = format.FileID(p), format.File
			}
		}
		ents = append(ents, e)
	}
	return ents, subdirs, nil
}
