package fs

import (
	"context"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/fs/ino"
	"github.com/ucmfs/ucmfs/fs/light"
	"github.com/ucmfs/ucmfs/layout/registry"
	"github.com/ucmfs/ucmfs/store"
	"github.com/ucmfs/ucmfs/vfs"
	"golang.org/x/sys/unix"
)

// shardNode is a shard directory (vfs.Shard: what it holds and the rules
// of its names): <model>/<hh> of a ucmb model, or a raw shard of a
// ucm-posix model (raw_shard.go). Files being written are shown to their
// writers only.
type shardNode struct {
	gofs.Inode
	dirCommon
	sh  vfs.Shard
	ino uint64
	// attr fills the directory's attributes, chosen when the node is
	// made: a ucmb shard's carry the time its content last changed
	// (shardAttr), a raw shard's are its model's.
	attr func(a *fuse.Attr)
}

var (
	_ = (gofs.NodeLookuper)((*shardNode)(nil))
	_ = (gofs.NodeReaddirer)((*shardNode)(nil))
	_ = (gofs.NodeGetattrer)((*shardNode)(nil))
	_ = (gofs.NodeCreater)((*shardNode)(nil))
	_ = (gofs.NodeUnlinker)((*shardNode)(nil))
	_ = (gofs.NodeMkdirer)((*shardNode)(nil))
	_ = (gofs.NodeRmdirer)((*shardNode)(nil))
	_ = (gofs.NodeStatfser)((*shardNode)(nil))
	_ = (gofs.NodeRenamer)((*shardNode)(nil))
	_ = (gofs.NodeLinker)((*shardNode)(nil))
	_ = (gofs.NodeSymlinker)((*shardNode)(nil))
	_ = (gofs.NodeMknoder)((*shardNode)(nil))
	_ = (gofs.NodeOnForgetter)((*shardNode)(nil))
	_ = (gofs.NodeFsyncer)((*shardNode)(nil))
)

func newShardNode(s *fsState, model string, shard byte, ino uint64) *shardNode {
	sh := vfs.HexShard(model, shard)
	return &shardNode{dirCommon: dirCommon{common: common{s: s}, what: model + "/" + sh.Dir}, sh: sh, ino: ino,
		attr: func(a *fuse.Attr) { s.shardAttr(a, model, shard) }}
}

// OnForget frees the node's number and leaves the shard registry.
func (d *shardNode) OnForget() {
	d.s.shards.Remove(d.ino, d)
	d.s.inos.Release(ino.ShardName(d.sh.Model, d.sh.Num, d.sh.Dir, d.sh.Width), d.ino)
}

// Getattr describes the shard directory.
func (d *shardNode) Getattr(ctx context.Context, f gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	d.attr(&out.Attr)
	out.SetTimeout(d.s.opts.EntryTTL)
	return 0
}

// Lookup finds a published block or sidecar (vfs.Shard.Lookup, as the
// light layer does: light_host.go), or a sidecar the mount can derive
// from its block (repr_node.go). A bad name is ENOENT. A miss is cached
// for Options.NegativeTTL, except while this mount writes the name (or
// just finished): then the kernel keeps nothing, so the file shows up as
// soon as its writer's close publishes it.
func (d *shardNode) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	if w := d.staging(ctx, name); w != nil {
		return d.pendingInode(ctx, w, out), 0
	}
	f, err := d.sh.Lookup(d.s.store, name)
	if err != nil {
		d.s.debugFail("lookup", d.what+"/"+name, err)
		return nil, d.s.otherWriter(d.sh.Model, d.sh.Dir, name, out)
	}
	key := f.Key
	if f.Missing() && registry.Of(key).IsSidecar(key) {
		size, mtime, ok, derr := d.s.store.Sidecars().Derivable(key)
		if derr != nil {
			return nil, d.s.fail("lookup", key.Path(), derr)
		}
		if ok {
			return d.derivedEntry(ctx, key, size, mtime, out), 0
		}
	}
	if f.Missing() {
		if light.Materializing(ctx) {
			// A light node of a file gone since it was listed: it gets
			// the node the kernel would have had (see package light).
			return d.fileInode(ctx, key, f.Info, out), 0
		}
		return nil, d.s.missEntry(f, out)
	}
	if f.Err != nil {
		return nil, d.s.fail("lookup", key.Path(), f.Err)
	}
	return d.fileInode(ctx, key, f.Info, out), 0
}

// otherWriter answers a lookup of name that found nothing the caller may
// see: ENOENT, and while another user writes a file under that name (a
// staging file, which only its user sees) nothing the kernel keeps: its
// directory cache is every user's, and a cached miss would hide the file
// from its own writer for the negative TTL.
func (s *fsState) otherWriter(model, dir, name string, out *fuse.EntryOut) syscall.Errno {
	if s.store.Writes().Named(model, dir, name) {
		out.SetEntryTimeout(time.Nanosecond) // keeps go-fuse from caching the miss
	}
	return errnoMissing
}

// missEntry fills the answer to a lookup that missed: ENOENT, cached
// for the negative TTL, except while this mount writes the name (or
// finished since the lookup began: vfs.Found.MissCacheable): then the
// kernel keeps nothing, so the file shows up as soon as its writer's
// close publishes it.
func (s *fsState) missEntry(f vfs.Found, out *fuse.EntryOut) syscall.Errno {
	if !f.MissCacheable(s.store) {
		out.SetEntryTimeout(time.Nanosecond) // keeps go-fuse from caching the miss
	}
	return errnoMissing
}

// publishedAttr fills the attributes and timeouts of the entry of a
// published file: what a lookup answers, through its go-fuse node or as a
// light node.
func (s *fsState) publishedAttr(key format.Key, bi store.BlockInfo, out *fuse.EntryOut) {
	s.blockAttr(&out.Attr, bi.Size, bi.MTime, key)
	ttl(out, s.opts.EntryTTL)
}

// fileInode returns the node of a published file and fills out.
func (d *shardNode) fileInode(ctx context.Context, key format.Key, bi store.BlockInfo, out *fuse.EntryOut) *gofs.Inode {
	id := ino.FileName(key)
	ino := d.s.inos.Acquire(id)
	made := false
	ch := newChild(ctx, &d.Inode, key.FileName(), ino, syscall.S_IFREG, func() gofs.InodeEmbedder {
		made = true
		return newStoredNode(d.s, key, ino)
	})
	if made && !light.Materializing(ctx) {
		d.s.kernel.Add(ch)
	}
	d.s.publishedAttr(key, bi, out)
	return ch
}

// Fsync makes the shard's published files durable (fsState.syncDir).
func (d *shardNode) Fsync(ctx context.Context, f gofs.FileHandle, flags uint32) syscall.Errno {
	return d.s.syncDir(ctx, d.what, d.sh.Model, func() []format.Key { return d.sh.Keys(d.s.store) })
}

// Readdir lists the published files of the shard, sorted by id, a
// block's sidecar before it (vfs.Shard.Listing, vfs/shard_order.go).
func (d *shardNode) Readdir(ctx context.Context) (gofs.DirStream, syscall.Errno) {
	list := d.sh.Listing(d.s.store, d.s.inos, callerUid(ctx))
	ents := append(make([]fuse.DirEntry, 0, 2+len(list)), dots(d.ino, d.s.modelIno(d.sh.Model))...)
	for _, e := range list {
		ents = append(ents, fuse.DirEntry{Name: e.Name, Mode: syscall.S_IFREG, Ino: e.Ino})
	}
	return gofs.NewListDirStream(ents), 0
}

// Create starts writing a block or sidecar under its final name, or a
// staging file (store/writes.go): a private file that only its writer sees
// until close (or rename) publishes it. A bad name is EINVAL; an id
// already published is EEXIST with O_EXCL, EACCES without (a staging file
// of it is fine: publishing it keeps one copy).
func (d *shardNode) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*gofs.Inode, gofs.FileHandle, uint32, syscall.Errno) {
	key, staging, err := d.sh.ParseName(name)
	if err != nil {
		return nil, nil, 0, d.s.fail("create", d.what+"/"+name, err)
	}
	w, h, errno := d.s.beginWrite(callerProc(ctx), key, name, staging, flags)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	return d.pendingInode(ctx, w, out), h, h.OpenFlags(), 0
}

// staging returns the staging file name is in this shard for the caller
// (vfs.Shard.Staging), or nil.
func (d *shardNode) staging(ctx context.Context, name string) *store.Draft {
	return d.sh.Staging(d.s.store, name, callerUid(ctx))
}

// pendingInode returns the node of a file being written and fills out;
// nothing is cached by the kernel, so other processes never see it.
func (d *shardNode) pendingInode(ctx context.Context, w *store.Draft, out *fuse.EntryOut) *gofs.Inode {
	ch := newChild(ctx, &d.Inode, w.Name(), vfs.PendingIno(w), syscall.S_IFREG, func() gofs.InodeEmbedder {
		return d.s.pending.NewNode(w)
	})
	d.s.writeAttr(w, &out.Attr)
	ttl(out, 0)
	return ch
}

// Unlink removes a block (and its sidecar) or a sidecar from every tier.
// Open descriptors keep reading what they opened; a GPU load of the block
// in flight finishes first.
func (d *shardNode) Unlink(ctx context.Context, name string) syscall.Errno {
	if w := d.staging(ctx, name); w != nil {
		w.Discard() // a staging file: removed before its rename
		return 0
	}
	key, err := d.sh.Key(name)
	if err != nil {
		d.s.debugFail("unlink", d.what+"/"+name, err)
		return errnoMissing
	}
	side, ok, err := vfs.UnlinkPublished(d.s.store, key) // after the GPU loads of the block
	if err != nil {
		return d.s.fail("unlink", key.Path(), err)
	}
	if ok && (d.GetChild(side.FileName()) != nil || d.s.light.Holds(d.sh.Dir, side)) {
		// In the background: the kernel holds this directory's lock
		// until UNLINK is answered, and the notification takes it.
		go d.s.notifyGone(&d.Inode, side.FileName())
	}
	return 0
}

// Rename publishes a staging file under the final name it stands for
// (vfs.Shard.RenameTarget, store.Draft.Rename): at once when no
// descriptor of it is open (the errno is the verdict), else when its
// writer has closed them all. Every other
// rename is refused: published names are immutable.
func (d *shardNode) Rename(ctx context.Context, name string, newParent gofs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	w := d.staging(ctx, name)
	if w == nil || !w.IsStaging() {
		return d.s.fail("rename", d.what+"/"+name+" -> "+newName, store.ErrImmutable)
	}
	if newParent.EmbeddedInode() != &d.Inode {
		return d.s.fail("rename", d.what+"/"+name+" -> "+newName, vfs.ErrCrossDir)
	}
	key, err := d.sh.RenameTarget(d.s.store, w, name, newName, flags&unix.RENAME_EXCHANGE != 0, flags&unix.RENAME_NOREPLACE != 0)
	if err != nil {
		return d.s.refuse("rename", d.what+"/"+name+" -> "+newName, err)
	}
	if err := w.Rename(ctx); err != nil {
		return d.s.fail("rename", key.Path(), err)
	}
	d.s.dropPublishedName(&d.Inode, newName)
	return 0
}

// Mkdir is refused: a shard holds files only.
func (d *shardNode) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	return nil, d.s.fail("mkdir", d.what+"/"+name, store.ErrImmutable)
}

// Rmdir: a shard holds no directories.
func (d *shardNode) Rmdir(ctx context.Context, name string) syscall.Errno {
	return errnoNotDir
}
