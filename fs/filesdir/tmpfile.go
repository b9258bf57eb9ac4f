package filesdir

import (
	"context"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/fs/pending"
	"github.com/ucmfs/ucmfs/vfs"
	"golang.org/x/sys/unix"
)

// O_TMPFILE and linkat in a files model (llm-d's fs backend writes a
// block so when asked to): open(dir, O_TMPFILE) makes a staging file
// under a name no lookup or listing shows (vfs.TmpfileName), and
// linkat(fd, "", dir, name, AT_EMPTY_PATH) (or of /proc/self/fd/N with
// AT_SYMLINK_FOLLOW) gives it its name, as a rename of a staging file
// does: it publishes at its writer's last close, or at once when closed
// already. A tmpfile never linked is discarded at its last close. Link of
// anything else is refused, as everywhere in the mount: a block has one
// name.

// Tmpfile starts an O_TMPFILE file in the directory.
func (o Ops) Tmpfile(ctx context.Context, flags uint32, out *fuse.EntryOut) (*gofs.Inode, gofs.FileHandle, uint32, syscall.Errno) {
	return o.Create(ctx, vfs.TmpfileName(), flags|unix.O_EXCL, out)
}

// Link names a tmpfile of the model name in this directory; a name that
// exists is EEXIST (link never replaces).
func (o Ops) Link(ctx context.Context, target gofs.InodeEmbedder, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	p, ok := target.(*pending.Node)
	if !ok || !vfs.IsTmpfileName(p.Draft().Name()) || p.Draft().Key().Model != o.model {
		return o.x.Host.Node(o.what(name)).Link(ctx, target, name, out)
	}
	rel, err := o.path(name)
	if err != nil {
		return nil, o.x.Host.Fail("link", o.what(name), err)
	}
	key := format.FileKey(o.model, rel)
	if o.x.Store.Tiers().Has(key) || o.x.Store.FilesDir(o.model, rel) || o.writing(ctx, key, name) != nil {
		return nil, o.x.Errnos.Exists
	}
	if err := p.Draft().RenameTo(ctx, key); err != nil {
		return nil, o.x.Host.Fail("link", key.Path(), err)
	}
	o.x.Host.DropPublishedName(o.node, name)
	o.x.Host.WriteAttr(p.Draft(), &out.Attr)
	ttl(out, 0)
	return p.EmbeddedInode(), 0
}

// Tmpfile starts an O_TMPFILE file.
func (d *Dir) Tmpfile(ctx context.Context, flags uint32, mode uint32, out *fuse.EntryOut) (*gofs.Inode, gofs.FileHandle, uint32, syscall.Errno) {
	return d.ops().Tmpfile(ctx, flags, out)
}

// Link names a tmpfile (linkat); anything else is refused.
func (d *Dir) Link(ctx context.Context, target gofs.InodeEmbedder, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	return d.ops().Link(ctx, target, name, out)
}

var (
	_ = (gofs.NodeTmpfiler)((*Dir)(nil))
	_ = (gofs.NodeLinker)((*Dir)(nil))
)
