package fs

import (
	"context"
	"strings"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/layout/registry"
	"github.com/ucmfs/ucmfs/store"
	"github.com/ucmfs/ucmfs/vfs"
)

// common is embedded in every node type: the shared state, and the answers
// that are the same for every node (statfs; rename, link, symlink and mknod
// refused; no extended attributes unless the node type has its own).
type common struct {
	s *fsState
}

// Statfs reports the tiers' capacity and use in 4096-byte blocks, and
// the files they hold of the most they may hold (vfs.StatfsOf).
func (c common) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	if h := c.s.statfsHook.Load(); h != nil {
		(*h)()
	}
	sf := vfs.StatfsOf(c.s.store.Space())
	out.Bsize, out.Frsize = vfs.StatfsBlock, vfs.StatfsBlock
	out.Blocks, out.Bfree, out.Bavail = sf.Blocks, sf.Bfree, sf.Bfree
	out.Files, out.Ffree = sf.Files, sf.Ffree
	out.NameLen = 255
	return 0
}

// Rename is refused: published names are immutable.
func (c common) Rename(ctx context.Context, name string, newParent gofs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	return c.s.fail("rename", name+" -> "+newName, store.ErrImmutable)
}

// Link is refused: a block has exactly one name.
func (c common) Link(ctx context.Context, target gofs.InodeEmbedder, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	return nil, c.s.fail("link", name, store.ErrImmutable)
}

// Symlink is refused: only blocks and sidecars live here.
func (c common) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	return nil, c.s.fail("symlink", name, store.ErrImmutable)
}

// Mknod is refused: only blocks and sidecars live here.
func (c common) Mknod(ctx context.Context, name string, mode uint32, dev uint32, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	return nil, c.s.fail("mknod", name, store.ErrImmutable)
}

// Getxattr of a node without attributes: see xattrAnswer.
func (c common) Getxattr(ctx context.Context, attr string, dest []byte) (uint32, syscall.Errno) {
	return 0, c.s.noXattr("getxattr", attr)
}

// Setxattr of a node without attributes: see xattrAnswer.
func (c common) Setxattr(ctx context.Context, attr string, data []byte, flags uint32) syscall.Errno {
	return c.s.noXattr("setxattr", attr)
}

// Removexattr of a node without attributes: see xattrAnswer.
func (c common) Removexattr(ctx context.Context, attr string) syscall.Errno {
	return c.s.noXattr("removexattr", attr)
}

// Listxattr of a node without attributes lists nothing.
func (c common) Listxattr(ctx context.Context, dest []byte) (uint32, syscall.Errno) {
	return 0, 0
}

// dirCommon is embedded in every directory node: the changes that only
// make sense in a shard directory are refused everywhere else.
type dirCommon struct {
	common
	what    string // for logs: "root", "model", ".ucm"
	anyMode bool   // any chmod is accepted (and changes nothing)
}

// Create is refused outside shard directories.
func (d dirCommon) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*gofs.Inode, gofs.FileHandle, uint32, syscall.Errno) {
	return nil, nil, 0, d.s.fail("create", d.what+"/"+name, store.ErrImmutable)
}

// Unlink is refused outside shard directories (the kernel answers EISDIR
// itself for the directories that live here).
func (d dirCommon) Unlink(ctx context.Context, name string) syscall.Errno {
	return d.s.fail("unlink", d.what+"/"+name, store.ErrImmutable)
}

// Fsync of a directory (FSYNCDIR) makes its entries durable: see
// fsState.syncDir. A directory that holds no files (the root, a ucmb
// model, .ucm) only has the tiers synced.
func (d dirCommon) Fsync(ctx context.Context, f gofs.FileHandle, flags uint32) syscall.Errno {
	return d.s.syncDir(ctx, d.what, "", nil)
}

// syncDir answers the fsync of the directory what of model, whose entries
// are the published files keys lists (vfs.SyncDir).
func (s *fsState) syncDir(ctx context.Context, what, model string, keys func() []format.Key) syscall.Errno {
	if err := vfs.SyncDir(ctx, s.store, model, keys); err != nil {
		return s.fail("fsyncdir", what, err)
	}
	return 0
}

// Setattr of a directory: new times are accepted and change nothing
// (directories are virtual; rsync -a and tar -x restore them), and so is
// a chmod or chown to what the directory already is; any other change is
// EPERM, but for a directory with anyMode (a raw shard: UCM chmods the
// shards it makes, and ignores the result) any chmod is accepted and
// changes nothing.
func (d dirCommon) Setattr(ctx context.Context, f gofs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	d.s.dirAttr(&out.Attr, 2)
	return d.sameAttr(setAttrOf(in), &out.Attr)
}

// sameAttr accepts a setattr of a directory whose attributes are cur only
// when it changes nothing but times (vfs.SameAttr); else EPERM.
func (d dirCommon) sameAttr(sa vfs.SetAttr, cur *fuse.Attr) syscall.Errno {
	if op, err := vfs.SameAttr(sa, store.ModelOwner{Uid: cur.Uid, Gid: cur.Gid, Mode: cur.Mode}, d.anyMode); err != nil {
		return d.s.fail(op, d.what, err)
	}
	return 0
}

// newChild returns the node for a child of parent: the one parent has
// under name when its number is ino, else a new one built by mk. A
// published File's node the new one replaces under name in go-fuse's
// tree is recorded (vfs.FilesNodes.Replaced): the kernel may keep it there.
func newChild(ctx context.Context, parent *gofs.Inode, name string, ino uint64, mode uint32, mk func() gofs.InodeEmbedder) *gofs.Inode {
	if ch := parent.GetChild(name); ch != nil {
		if ch.StableAttr().Ino == ino {
			return ch
		}
		if b, ok := ch.Operations().(*blockFile); ok && registry.Of(b.key).Replaces() {
			b.s.files.Replaced(b.StableAttr().Ino, b)
		}
	}
	return parent.NewInode(ctx, mk(), gofs.StableAttr{Mode: mode, Ino: ino})
}

// notifyGoneFrom is notifyGone from the handler of a request of user
// uid that answers once the kernel took it (an OPEN of a file gone). The
// kernel takes the directory's lock for the notification, and another
// request may hold it while it waits for its answer (a READDIR of the
// directory holds it shared): over io_uring that request must find a
// ring entry of this CPU's queue free, so this handler counts as one
// waiting for another (uring.Transport.HoldEntry). Without it, two OPENs
// of files a move took away held both entries of a queue, waiting for a
// lister's READDIR queued behind them (TestFilesDirMoveReaders, 1 run of
// CI). Where no entry can be added, the notification goes out after the
// answer.
func (s *fsState) notifyGoneFrom(uid uint32, parent *gofs.Inode, name string) {
	if r := s.ring.Load(); r != nil {
		done, err := r.HoldEntry(uid)
		if err != nil {
			go s.notifyGone(parent, name)
			return
		}
		defer done()
	}
	s.notifyGone(parent, name)
}

// replacedWait bounds how long a truncate waits for the notification that
// drops the name's entry before it answers. The kernel takes the
// directory's lock for it, and a rename in the directory holds that lock
// while it waits for the truncated file's, which the truncate's caller
// holds until the answer: past the wait the answer goes first, and the
// notification after it.
const replacedWait = 100 * time.Millisecond

// notifyGoneWithin is notifyGoneFrom, waiting at most wait for the
// notification: it is sent from a goroutine, which goes on after that.
func (s *fsState) notifyGoneWithin(uid uint32, parent *gofs.Inode, name string, wait time.Duration) {
	if parent == nil {
		return
	}
	if r := s.ring.Load(); r != nil {
		if done, err := r.HoldEntry(uid); err == nil {
			defer done()
		}
	}
	sent := make(chan struct{})
	go func() {
		s.notifyGone(parent, name)
		close(sent)
	}()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-sent:
	case <-t.C:
	}
}

// notifyGone tells the kernel to drop its cached entry for name under
// parent: a block that went away by another path than unlink (eviction,
// another daemon) stops looking present, so an O_EXCL create of it works.
// It is called from OPEN (notifyGoneFrom), which the kernel sends without
// holding the directory's lock, so the notification cannot wait on this
// request, and from goroutines.
func (s *fsState) notifyGone(parent *gofs.Inode, name string) {
	if parent == nil {
		return
	}
	if errno := parent.NotifyEntry(name); errno != 0 && errno != errnoMissing {
		s.log.Debug("entry invalidation", "name", name, "errno", errno)
	}
}

// dropPublishedName drops the kernel's entry of name under parent once
// the request that published a file there (a rename of its staging file,
// a link of a tmpfile) is answered. The kernel moved the entry of the file
// being written to that name: its node is the pending one, cached for no
// time. Left there, the next lookup of the name finds the published
// file's node instead: the kernel then forgets one node and looks the name
// up a second time. Dropped, that first access is one LOOKUP. It runs in
// a goroutine: the kernel holds the directory's lock until the answer.
func (s *fsState) dropPublishedName(parent *gofs.Inode, name string) {
	go func() {
		s.notifyGone(parent, name)
		s.namesDropped.Add(1)
	}()
}

// ttl sets both timeouts of an entry.
func ttl(out *fuse.EntryOut, d time.Duration) {
	out.SetEntryTimeout(d)
	out.SetAttrTimeout(d)
}

// notifyPublished drops the kernel's cached miss of a block published
// behind its back (by a GPU dump, not through a file it created), so that
// a lookup made before the dump does not hide it for the negative TTL. It
// is the store's OnPublish hook.
func (s *fsState) notifyPublished(k format.Key) {
	s.notifyGone(s.parentOf(k), k.FileName())
}

// notifyReplacedBy is notifyReplaced for a close or an fsync by a
// process of uid that published k: when the kernel holds a node under
// k's name (a reader's, of the version replaced), the answer waits for
// the notification, at most replacedWait, so that the caller's next open
// of the name finds the version it just published, as on a local disk
// (its entry named the reader's node until the notification landed: a
// read right after the close read the old bytes).
func (s *fsState) notifyReplacedBy(uid uint32, k format.Key) {
	if !vfs.ReplacedVersion(s.store, k) {
		return
	}
	parent := s.parentOf(k)
	if parent == nil || parent.GetChild(k.FileName()) == nil {
		s.notifyReplaced(k)
		return
	}
	s.notifyGoneWithin(uid, parent, k.FileName(), replacedWait)
	s.namesReplaced.Add(1)
}

// notifyReplaced drops the kernel's entry of a File of a files model
// published over an earlier version by a close, fsync or release of its
// writer: a process that looked the name up while the new version was
// being written cached the old version's node for the entry TTL, and
// would go on finding it (its size, its inode number) instead of the new
// one. It is sent from a goroutine: the kernel takes the directory's lock
// for it, and a request that holds that lock (a create in the directory)
// may be waiting for the thread that would send it (an io_uring queue has
// two).
func (s *fsState) notifyReplaced(k format.Key) {
	if vfs.ReplacedVersion(s.store, k) {
		go func() {
			s.notifyGone(s.parentOf(k), k.FileName())
			s.namesReplaced.Add(1)
		}()
	}
}

// parentOf is the node of the directory holding k, as far as the kernel
// knows it: nil when it has not looked up every directory on the way, so
// that nothing of k can be cached.
func (s *fsState) parentOf(k format.Key) *gofs.Inode {
	if s.root == nil {
		return nil
	}
	n := s.root.GetChild(k.Model)
	dir := k.ShardDir()
	if !registry.Of(k).Tree() {
		if n == nil {
			return nil
		}
		return n.GetChild(dir)
	}
	for c := range strings.SplitSeq(dir, "/") {
		if n == nil || c == "" {
			break
		}
		n = n.GetChild(c)
	}
	return n
}
