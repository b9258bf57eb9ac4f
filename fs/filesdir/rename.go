package filesdir

import (
	"context"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/vfs"
	"golang.org/x/sys/unix"
)

// Rename publishes a file being written under the name it is renamed to,
// in any directory of the model, replacing a file published there
// (RENAME_NOREPLACE: EEXIST), or moves a published file there or to
// another files model (store.Store.MoveFile). A directory: renameDir.
func (o Ops) Rename(ctx context.Context, name string, newParent gofs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	what := o.what(name) + " -> " + newName
	rel, err := o.path(name)
	if err != nil {
		return o.x.Errnos.Missing
	}
	from := format.FileKey(o.model, rel)
	w := o.x.ownWriting(ctx, from, name, true)
	if w == nil && !o.x.Store.Tiers().Has(from) {
		if o.x.Store.FilesDir(o.model, rel) {
			return o.renameDir(ctx, name, rel, newParent, newName, flags)
		}
		return o.x.Errnos.Missing
	}
	model, path, errno := o.renameTarget(what, newParent, newName, flags)
	if errno != 0 {
		return errno
	}
	target := format.FileKey(model, path)
	if err := vfs.CheckRename(o.x.Store, from, target, w, flags&unix.RENAME_NOREPLACE != 0); err != nil {
		return o.x.Host.Refuse("rename", what, err)
	}
	published, err := vfs.RenameFile(ctx, o.x.Store, from, target, w, func() func() {
		return o.moving(name, target, newParent, newName)
	})
	if published {
		o.x.Host.DropPublishedName(newParent.EmbeddedInode(), newName)
	}
	if err != nil {
		return o.x.Host.Fail("rename", target.Path(), err)
	}
	// The caller's own file under the name replaced goes with it, as on
	// a local disk (vfs.OwnWriting); other processes' are theirs, unseen by
	// the caller, and publish at their own close. (w itself is the
	// caller's there now when a descriptor still holds it open.)
	if d := o.x.ownWriting(ctx, target, newName, true); d != nil && d != w {
		d.Discard()
	}
	return 0
}

// moving is what a move of the published file under name to target
// does to the kernel's nodes (vfs.RenameFile): the kernel moves its
// entry, and the node of name with it, to the new name; until it looks
// the name up again (it is told to at once), that node serves target. (A
// new file under name gets a node of its own: the move made it a new
// generation.) A node that is not the file's current version stays what
// it is.
func (o Ops) moving(name string, target format.Key, newParent gofs.InodeEmbedder, newName string) (moved func()) {
	ch := o.node.GetChild(name)
	if ch != nil {
		if b, ok := ch.Operations().(File); !ok || b.Superseded(b.Served()) {
			ch = nil
		}
	}
	return func() {
		if ch != nil {
			o.x.Files.Moved(ch.StableAttr().Ino, target, o.x.Store.Writes().Gen(target))
		}
		go o.x.Host.NotifyGone(newParent.EmbeddedInode(), newName)
	}
}

// dirOf returns the files model and directory a node is, or false.
func (x *Dirs) dirOf(n gofs.InodeEmbedder) (model, dir string, ok bool) {
	if d, ok := n.(*Dir); ok {
		model, dir := d.where()
		return model, dir, true
	}
	model, ok = x.Host.RootOf(n)
	return model, "", ok
}
