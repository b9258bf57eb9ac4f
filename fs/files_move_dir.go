package fs

import (
	"context"
	"errors"
	"fmt"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/store"
	"golang.org/x/sys/unix"
)

// renameDir moves the directory name (at rel) of a files model to
// newName in newParent, a directory of the same model
// (store.Store.MoveFilesDir). The kernel moves its entry, and the node
// with it, when the rename is answered: that node keeps its number (a
// process whose working directory it is, or that has it open, goes on
// using it, as on a local disk), and it and the nodes beneath it serve
// the new paths (followMovedDir). Their cached listings are dropped
// once the rename is answered: they were registered under the old paths.
func (o filesOps) renameDir(ctx context.Context, name, rel string, newParent gofs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	what := o.what(name) + " -> " + newName
	model, dir, ok := o.s.filesDirOf(newParent)
	if !ok || model != o.model {
		return o.s.fail("rename", what, fmt.Errorf("a directory to another model: %w", errCrossDir))
	}
	if flags&unix.RENAME_EXCHANGE != 0 {
		return o.s.fail("rename", what, fmt.Errorf("exchange: %w", errCrossDir))
	}
	if err := checkFileName(dir, newName); err != nil {
		return o.s.fail("rename", what, err)
	}
	target := format.JoinFilePath(dir, newName)
	if o.s.store.HasFile(format.FileKey(o.model, target)) {
		return errnoNotDir
	}
	if flags&unix.RENAME_NOREPLACE != 0 && o.s.store.FilesDir(o.model, target) {
		return errnoExists
	}
	err := o.s.store.MoveFilesDir(ctx, o.model, rel, target, callerProc(ctx).Uid)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return errnoMissing
	case err != nil:
		return o.s.fail("rename", what, err)
	}
	if ch := o.node.GetChild(name); ch != nil {
		var dirs []*filesDir
		o.s.followMovedDir(ch, o.model, target, &dirs)
		go func() {
			for _, d := range dirs {
				d.ops().dropListing()
			}
		}()
	}
	return 0
}

// followMovedDir points node n, now at path in model, and the nodes the
// kernel holds beneath it at their new paths: a directory's moved path, a
// published file's key (filesNodes.moved). The directories are appended
// to dirs: the listings the kernel cached of them are dropped once the
// rename is answered.
func (s *fsState) followMovedDir(n *gofs.Inode, model, path string, dirs *[]*filesDir) {
	switch op := n.Operations().(type) {
	case *blockFile: // a published File (a file being written has none: ErrBusy)
		s.files.moved(n.StableAttr().Ino, format.FileKey(model, path))
		return
	case *filesDir:
		op.moved.Store(&path)
		*dirs = append(*dirs, op)
	default:
		return
	}
	for name, ch := range n.Children() {
		s.followMovedDir(ch, model, format.JoinFilePath(path, name), dirs)
	}
}

// movedHere is the node of a directory a rename moved to name (at rel),
// which the kernel keeps there: a lookup of the name answers it again, so
// that the kernel keeps the entry (a new number would make it drop the
// entry, and a process whose working directory it is would lose it).
func (o filesOps) movedHere(name, rel string) *gofs.Inode {
	ch := o.node.GetChild(name)
	if ch == nil {
		return nil
	}
	if d, ok := ch.Operations().(*filesDir); ok && d.moved.Load() != nil && d.path() == rel {
		return ch
	}
	return nil
}
