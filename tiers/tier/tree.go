package tier

import (
	"errors"
	"strings"

	"github.com/ucmfs/ucmfs/tiers/rootfs"
	"golang.org/x/sys/unix"
)

// ModelMetaName is the settings file of a model in a tier directory. Its
// leading '.' keeps it out of every layout rule: the layout walk skips it
// by name.
const ModelMetaName = ".ucmfs-model.json"

// ReservedInModel reports whether name, in a model directory of a tier,
// is one of the tiers' own records there: the settings record
// (ModelMetaName) and its temp files, and the tree mark. No File of a
// files model may take such a name at the model's root: it would be
// written over the record on every tier.
func ReservedInModel(name string) bool {
	return name == ModelMetaName || name == TreeMarkName || strings.HasPrefix(name, ModelMetaName+TmpPrefix)
}

// TreeMarkName marks a model directory of a tier as a tree of Files.
const TreeMarkName = ".ucmfs-tree"

// IsTree reports whether the model directory model beneath r is a tree
// of Files.
func IsTree(r rootfs.FS, model string) bool {
	var st unix.Stat_t
	return r.Stat(model+"/"+TreeMarkName, &st) == nil
}

// MarkTree writes the tree mark in the model directory model beneath r,
// unless it is there, and fsyncs the model directory. A mark that is there is never opened for writing:
// on a tier that is itself a files model of a ucmfs mount, a published
// file is read-only (EACCES), and a mark made by another daemon sharing
// the tier is published there.
func MarkTree(r rootfs.FS, model string) error {
	return markTree(r, model, false)
}

// markTree is MarkTree; found also fsyncs the model directory when the
// mark is there already (its name may not be durable: a mark made by a
// call whose fsync failed, or by another daemon).
func markTree(r rootfs.FS, model string, found bool) error {
	if IsTree(r, model) {
		if !found {
			return nil
		}
		return syncMark(r, model)
	}
	fd, err := r.OpenFD(model+"/"+TreeMarkName, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY, 0o600)
	if err != nil && !errors.Is(err, unix.EEXIST) { // EEXIST: made meanwhile, by another daemon or another call
		return OSErr("mark tree", err)
	}
	if err == nil {
		unix.Close(fd)
	} else if !found {
		return nil
	}
	return syncMark(r, model)
}

// syncMark makes the mark's name durable: without it the model's files
// are not found after a power cut (the model is not taken for a tree).
func syncMark(r rootfs.FS, model string) error {
	if err := r.SyncDir(model); err != nil {
		return OSErr("mark tree", err)
	}
	return nil
}
