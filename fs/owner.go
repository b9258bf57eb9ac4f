package fs

import (
	"context"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/vfs"
)

// Ownership and permissions (docs/semantics.md, "Owners"). The kernel
// checks them (the mount has default_permissions) against the attributes
// given here:
//
//   - the root is the daemon's, 0755; with allow_other it is 01777 (like
//     /tmp: anyone may make a model, only a model's owner or root may
//     remove it);
//   - a model directory and its shard directories belong to the model's
//     owner (store.ModelOwner: who made it) with the mode mkdir asked for,
//     so creating, unlinking and publishing in a model need write
//     permission on it, and reading its blocks search permission;
//   - a published block or sidecar belongs to the model's owner, mode 0444
//     masked by the model's read bits; a file being written belongs to the
//     process writing it, 0644;
//   - the control files are the daemon's, as before (control.Access).

// rootSharedPerm is the root's mode on an allow_other mount.
const rootSharedPerm = 0o1777

// rootAttr fills the root's attributes.
func (s *fsState) rootAttr(a *fuse.Attr) {
	s.dirAttr(a, uint32(2+1+len(s.store.Models().Names()))) // ., .., .ucm's .. and each model's
	if s.opts.AllowOther {
		a.Mode = syscall.S_IFDIR | rootSharedPerm
	}
}

// Setattr of the root: only times, or a change to what it already is.
func (r *rootNode) Setattr(ctx context.Context, f gofs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	r.s.rootAttr(&out.Attr)
	return r.sameAttr(setAttrOf(in), &out.Attr)
}

// modelAttr fills the attributes of model's directory or of one of its
// shard directories: its owner and mode, and the time its mkdir made it
// (the mount's time for a model made before that was kept).
func (s *fsState) modelAttr(a *fuse.Attr, nlink uint32, model string) {
	s.dirAttr(a, nlink)
	if made := s.store.Models().Made(model); !made.IsZero() {
		a.SetTimes(&made, &made, &made)
	}
	o := s.store.Models().Owner(model)
	a.Mode = syscall.S_IFDIR | o.Mode
	a.Owner = fuse.Owner{Uid: o.Uid, Gid: o.Gid}
}

// blockAttr fills the attributes of the published file key: read-only,
// as its model's read bits allow; a File of a files model also writable
// as its model's write bits allow (store.FileOwner).
func (s *fsState) blockAttr(a *fuse.Attr, size int64, mtime time.Time, key format.Key) {
	o := s.store.Models().FileOwner(key.Model, key.Kind)
	s.fileAttr(a, size, mtime, o.Mode)
	a.Owner = fuse.Owner{Uid: o.Uid, Gid: o.Gid}
}

// Setattr of a model directory: a change of its owner or mode as
// vfs.SetModelOwner decides; new times change nothing.
func (m *modelNode) Setattr(ctx context.Context, f gofs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	changed, op, err := vfs.SetModelOwner(m.s.store.Models(), m.model, callerUid(ctx), setAttrOf(in))
	if err != nil {
		return m.s.fail(op, m.model, err)
	}
	if changed {
		// The kernel checks permissions on the attributes it holds: those
		// of the model's directories and files, which show the model's
		// owner and mode, go before the change is answered (the kernel
		// locks only the model's inode meanwhile, and an attribute
		// invalidation of another inode takes none of its locks).
		m.s.dropModelAttrs(&m.Inode, m.model)
	}
	m.layout().attr(&out.Attr)
	return 0
}

// dropModelAttrs tells the kernel to drop the attributes it holds of
// every node under the model node root (its go-fuse nodes and the light
// nodes of its files), so that a new owner or mode applies at once, not
// after the entry TTL.
func (s *fsState) dropModelAttrs(root *gofs.Inode, model string) {
	srv := s.server.Load()
	if srv == nil {
		return
	}
	var walk func(n *gofs.Inode)
	walk = func(n *gofs.Inode) {
		for _, ch := range n.Children() {
			if errno := ch.NotifyContent(-1, 0); errno != 0 && errno != errnoMissing {
				s.log.Debug("attribute invalidation", "model", model, "errno", errno)
			}
			walk(ch)
		}
	}
	walk(root)
	for _, id := range s.light.ModelNodes(model) {
		srv.InodeNotify(id, -1, 0)
	}
}

// Setattr of a shard directory: shards always show their model's owner
// and mode, so a chmod by the model's owner or root changes nothing and
// succeeds (tar -x and rsync -a restore the modes of the directories they
// made, shards before their model); a chown to anyone but the model's
// owner is EPERM; times change nothing.
func (d *shardNode) Setattr(ctx context.Context, f gofs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	d.attr(&out.Attr)
	sa := setAttrOf(in)
	if sa.Mode != nil {
		if err := d.s.store.Models().CheckOwner(d.sh.Model, callerUid(ctx)); err != nil {
			return d.s.fail("chmod", d.what, err)
		}
		sa.Mode = nil
	}
	return d.sameAttr(sa, &out.Attr)
}

// checkModelOwner refuses a change of model's settings (its xattrs) by
// anyone but its owner or root.
func (s *fsState) checkModelOwner(ctx context.Context, model, attr string) syscall.Errno {
	if err := s.store.Models().CheckOwner(model, callerUid(ctx)); err != nil {
		return s.fail("setxattr", model+" "+attr, err)
	}
	return 0
}

// setAttrOf reads what a setattr asks to change.
func setAttrOf(in *fuse.SetAttrIn) vfs.SetAttr {
	var sa vfs.SetAttr
	if sz, ok := in.GetSize(); ok {
		n := int64(sz)
		sa.Size = &n
	}
	if t, ok := in.GetMTime(); ok {
		sa.MTime = &t
	}
	if mode, ok := in.GetMode(); ok {
		sa.Mode = &mode
	}
	if uid, ok := in.GetUID(); ok {
		sa.UID = &uid
	}
	if gid, ok := in.GetGID(); ok {
		sa.GID = &gid
	}
	return sa
}
