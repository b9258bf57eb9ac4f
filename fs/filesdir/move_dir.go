package filesdir

import (
	"context"
	"errors"
	"fmt"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/fs/ino"
	"github.com/ucmfs/ucmfs/store"
	"github.com/ucmfs/ucmfs/vfs"
	"golang.org/x/sys/unix"
)

// renameDir moves the directory name (at rel) of a files model to
// newName in newParent, a directory of the same or another files model
// (store.Store.MoveFilesDir). The kernel moves its entry, and the node
// with it, when the rename is answered: that node keeps its number (a
// process whose working directory it is, or that has it open, goes on
// using it, as on a local disk), and it and the nodes beneath it serve
// the new paths (followMovedDir). Their cached listings are dropped
// once the rename is answered: they were registered under the old paths.
func (o Ops) renameDir(ctx context.Context, name, rel string, newParent gofs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	what := o.what(name) + " -> " + newName
	model, target, errno := o.renameTarget(what, newParent, newName, flags)
	if errno != 0 {
		return errno
	}
	if o.x.Store.Tiers().Has(format.FileKey(model, target)) {
		return o.x.Errnos.NotDir
	}
	if flags&unix.RENAME_NOREPLACE != 0 && o.x.Store.FilesDir(model, target) {
		return o.x.Errnos.Exists
	}
	uid := o.x.Host.Caller(ctx).Uid
	// Not interrupted (a rename on a local disk never is: EINTR would
	// fail a Go caller, whose runtime signals its threads); the waits are
	// bounded.
	ctx = context.WithoutCancel(ctx)
	if err := o.x.Store.AwaitDirWrites(ctx, o.model, rel, model, target); err != nil {
		return o.x.Host.Fail("rename", what, err)
	}
	span := vfs.DirMove{FromModel: o.model, From: rel, ToModel: model, To: target}
	o.x.Moves.Begin(span)
	ch := o.node.GetChild(name)
	old := map[uint64]bool{}
	if ch != nil {
		o.x.supersededBeneath(ch, old)
	}
	o.x.Files.SupersededOffTree(o.x.Store, o.x.Inos, o.model, rel, old, File.Key)
	err := o.x.Store.MoveFilesDir(ctx, o.model, rel, model, target, uid)
	var dirs []*Dir
	if ch != nil && err == nil {
		o.x.followMovedDir(ch, model, target, old, &dirs)
	}
	if err == nil {
		o.x.Files.FollowMove(o.x.Store, span, old, File.Key)
	}
	o.x.Moves.End(span)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return o.x.Errnos.Missing
	case err != nil:
		return o.x.Host.Fail("rename", what, err)
	}
	go func() {
		for _, d := range dirs {
			d.ops().dropListing()
		}
	}()
	return 0
}

// renameTarget is where a rename of a file or directory of o to newName
// in newParent goes: a files model and the path in it. A parent outside
// the files models or RENAME_EXCHANGE is EXDEV (tools copy then), a bad
// name its errno.
func (o Ops) renameTarget(what string, newParent gofs.InodeEmbedder, newName string, flags uint32) (model, target string, errno syscall.Errno) {
	model, dir, ok := o.x.dirOf(newParent)
	if !ok {
		return "", "", o.x.Host.Fail("rename", what, fmt.Errorf("out of the files models: %w", vfs.ErrCrossDir))
	}
	if flags&unix.RENAME_EXCHANGE != 0 {
		return "", "", o.x.Host.Fail("rename", what, fmt.Errorf("exchange: %w", vfs.ErrCrossDir))
	}
	if err := vfs.CheckFileName(dir, newName); err != nil {
		return "", "", o.x.Host.Fail("rename", what, err)
	}
	return model, format.JoinFilePath(dir, newName), 0
}

// supersededBeneath adds to old the numbers of the nodes the kernel holds
// beneath n that are versions a newer one replaced (their descriptors go
// on reading them): a move takes the files' current versions along, and
// these stay what they are.
func (x *Dirs) supersededBeneath(n *gofs.Inode, old map[uint64]bool) {
	switch op := n.Operations().(type) {
	case File: // (Served() would wait for this move)
		if op.Superseded(x.Files.Follow(op.Key(), n.StableAttr().Ino)) {
			old[n.StableAttr().Ino] = true
		}
	case *Dir:
		for _, ch := range n.Children() {
			x.supersededBeneath(ch, old)
		}
	}
}

// followMovedDir points node n, now at path in model, and the nodes the
// kernel holds beneath it at their new paths: a directory's moved path
// and the name its number is held by (ino.Table.Rename), a published
// file's key (vfs.FilesNodes.Moved; its old name moved to a new generation,
// so a new file there is numbered anew), unless the node is in old (a
// version replaced before the move: supersededBeneath; those off
// go-fuse's tree: vfs.FilesNodes.FollowMove). The directories
// are appended to dirs: the listings the kernel cached of them are
// dropped once the rename is answered.
func (x *Dirs) followMovedDir(n *gofs.Inode, model, path string, old map[uint64]bool, dirs *[]*Dir) {
	switch op := n.Operations().(type) {
	case File: // a published File (a file being written has none: ErrBusy)
		if !old[n.StableAttr().Ino] {
			to := format.FileKey(model, path)
			x.Files.Moved(n.StableAttr().Ino, to, x.Store.Writes().Gen(to))
		}
		return
	case *Dir:
		x.Inos.Rename(ino.DirName(op.where()), ino.DirName(model, path), op.ino)
		x.Listings.Forget(vfs.FilesListingKey(op.where()), n) // registered under the old path
		op.moved.Store(&movedDir{model, path})
		*dirs = append(*dirs, op)
	default:
		return
	}
	for name, ch := range n.Children() {
		x.followMovedDir(ch, model, format.JoinFilePath(path, name), old, dirs)
	}
}

// movedHere is the node of a directory a rename moved to name (at rel),
// which the kernel keeps there: a lookup of the name answers it again, so
// that the kernel keeps the entry (a new number would make it drop the
// entry, and a process whose working directory it is would lose it).
func (o Ops) movedHere(name, rel string) *gofs.Inode {
	ch := o.node.GetChild(name)
	if ch == nil {
		return nil
	}
	if d, ok := ch.Operations().(*Dir); ok && d.moved.Load() != nil && *d.moved.Load() == (movedDir{o.model, rel}) {
		return ch
	}
	return nil
}
