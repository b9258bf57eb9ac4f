package fs

import (
	"context"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/fs/filesdir"
	"github.com/ucmfs/ucmfs/fs/pending"
	"github.com/ucmfs/ucmfs/store"
	"github.com/ucmfs/ucmfs/vfs"
)

// The directories of a files model (store/files_dirs.go, layout/files):
// package fs/filesdir's, with the adapter as its Host (filesHost). The
// model's root is its modelNode, whose layout type (filesModel) answers
// through filesdir.Ops; a published File is a blockFile, which the
// directories see as a filesdir.File.

// filesDirAttr fills the attributes of directory dir of files model
// model: its model's, with the time of the last change of what it holds
// as its mtime and ctime (vfs.ListingClock).
func (s *fsState) filesDirAttr(a *fuse.Attr, model, dir string) {
	s.modelAttr(a, uint32(2+len(s.store.FilesSubdirs(model, dir))), model)
	s.listingTime(a, vfs.FilesListingKey(model, dir))
}

// Key, Served, Superseded and Readers are the published File as the
// directories of its model see it (filesdir.File).
func (n *blockFile) Key() format.Key                { return n.key }
func (n *blockFile) Served() format.Key             { return n.served() }
func (n *blockFile) Superseded(key format.Key) bool { return n.superseded(key) }
func (n *blockFile) Readers() int                   { return n.open.Readers() }

// filesHost is the adapter as the directories of files models see it
// (filesdir.Host).
type filesHost struct{ s *fsState }

func (h filesHost) Fail(op, path string, err error) syscall.Errno   { return h.s.fail(op, path, err) }
func (h filesHost) Refuse(op, path string, err error) syscall.Errno { return h.s.refuse(op, path, err) }
func (h filesHost) Caller(ctx context.Context) store.Proc           { return callerProc(ctx) }
func (h filesHost) NewFile(key format.Key, ino uint64) gofs.InodeEmbedder {
	return newStoredNode(h.s, key, ino)
}
func (h filesHost) Node(what string) filesdir.Common {
	return dirCommon{common: common{s: h.s}, what: what}
}
func (h filesHost) Child(ctx context.Context, parent *gofs.Inode, name string, ino uint64, mode uint32, mk func() gofs.InodeEmbedder) *gofs.Inode {
	return newChild(ctx, parent, name, ino, mode, mk)
}
func (h filesHost) RootOf(n gofs.InodeEmbedder) (model string, ok bool) {
	if m, ok := n.(*modelNode); ok && m.layout().filesRoot() {
		return m.model, true
	}
	return "", false
}
func (h filesHost) PublishedAttr(key format.Key, bi store.BlockInfo, out *fuse.EntryOut) {
	h.s.publishedAttr(key, bi, out)
}
func (h filesHost) MissEntry(f vfs.Found, out *fuse.EntryOut) syscall.Errno {
	return h.s.missEntry(f, out)
}
func (h filesHost) DirAttr(a *fuse.Attr, model, dir string) { h.s.filesDirAttr(a, model, dir) }
func (h filesHost) Dots(model, dir string) []fuse.DirEntry {
	return dots(vfs.FilesDirInos(h.s.inos, model, dir, rootIno))
}
func (h filesHost) WriteAttr(w *store.Draft, a *fuse.Attr) { h.s.writeAttr(w, a) }
func (h filesHost) BeginWrite(p store.Proc, key format.Key, name string, staging bool, flags uint32) (*store.Draft, *pending.Handle, syscall.Errno) {
	return h.s.beginWrite(p, key, name, staging, flags)
}
func (h filesHost) SyncDir(ctx context.Context, what, model string, keys func() []format.Key) syscall.Errno {
	return h.s.syncDir(ctx, what, model, keys)
}
func (h filesHost) NotifyGone(parent *gofs.Inode, name string) { h.s.notifyGone(parent, name) }
func (h filesHost) DropPublishedName(parent *gofs.Inode, name string) {
	h.s.dropPublishedName(parent, name)
}
func (h filesHost) Getxattr(x *store.Attrs, path, attr string, dest []byte) (uint32, syscall.Errno) {
	return h.s.getxattr(x, path, attr, dest)
}
func (h filesHost) Setxattr(x *store.Attrs, path, attr string, data []byte) syscall.Errno {
	return h.s.setxattr(x, path, attr, data)
}
func (h filesHost) Removexattr(x *store.Attrs, path, attr string) syscall.Errno {
	return h.s.removexattr(x, path, attr)
}
func (h filesHost) Listxattr(x *store.Attrs, dest []byte) (uint32, syscall.Errno) {
	return h.s.listxattr(x, dest)
}
