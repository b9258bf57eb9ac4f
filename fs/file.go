package fs

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/fs/pending"
	"github.com/ucmfs/ucmfs/layout/registry"
	"github.com/ucmfs/ucmfs/store"
	"github.com/ucmfs/ucmfs/vfs"
	"golang.org/x/sys/unix"
)

// storedFile is what a published block and a published sidecar share:
// the key and, while the file is open (or its header was read), its open
// state (vfs.Opened). The node's number is its StableAttr's.
//
// The kernel keeps one node per block it has looked up (a `du` of a model
// looks up every block), so the node is kept small: 208 bytes, go-fuse's
// Inode included; what only an open file needs is behind one pointer.
type storedFile struct {
	gofs.Inode
	common
	key  format.Key
	open vfs.Opened
}

// blockFile is a published <id>.bin.
type blockFile struct{ storedFile }

// reprFile is a published <id>.repr sidecar.
type reprFile struct{ storedFile }

var (
	_ = (gofs.NodeGetattrer)((*blockFile)(nil))
	_ = (gofs.NodeSetattrer)((*blockFile)(nil))
	_ = (gofs.NodeOpener)((*blockFile)(nil))
	_ = (gofs.NodeGetxattrer)((*blockFile)(nil))
	_ = (gofs.NodeSetxattrer)((*blockFile)(nil))
	_ = (gofs.NodeRemovexattrer)((*blockFile)(nil))
	_ = (gofs.NodeListxattrer)((*blockFile)(nil))
	_ = (gofs.NodeStatfser)((*blockFile)(nil))
	_ = (gofs.NodeOnForgetter)((*blockFile)(nil))
	_ = (gofs.NodeAccesser)((*blockFile)(nil))

	_ = (gofs.NodeGetattrer)((*reprFile)(nil))
	_ = (gofs.NodeSetattrer)((*reprFile)(nil))
	_ = (gofs.NodeOpener)((*reprFile)(nil))
	_ = (gofs.NodeGetxattrer)((*reprFile)(nil))
	_ = (gofs.NodeSetxattrer)((*reprFile)(nil))
	_ = (gofs.NodeRemovexattrer)((*reprFile)(nil))
	_ = (gofs.NodeListxattrer)((*reprFile)(nil))
	_ = (gofs.NodeStatfser)((*reprFile)(nil))
	_ = (gofs.NodeOnForgetter)((*reprFile)(nil))
)

// newStoredNode returns the node type of key's kind.
func newStoredNode(s *fsState, key format.Key, ino uint64) gofs.InodeEmbedder {
	if registry.Of(key).IsSidecar(key) {
		n := &reprFile{}
		n.s, n.key = s, key
		return n
	}
	n := &blockFile{}
	n.s, n.key = s, key
	return n
}

// OnForget frees the node's number and closes its kept descriptor.
func (n *storedFile) OnForget() {
	n.open.Forget(n.s.descs)
	n.s.inos.Release(n.s.files.Forget(n.key, n.StableAttr().Ino), n.StableAttr().Ino)
}

// served is the key the node serves (vfs.FilesNodes.Serves).
func (n *storedFile) served() format.Key {
	return n.s.files.Serves(&n.s.dirMoves, n.key, n.StableAttr().Ino)
}

// Getattr describes the file: 0444, size = header + payload, st_blocks in
// 512-byte units, mtime = publish time. On a descriptor being written (a
// name reopened for writing after its block went away) it describes that.
func (n *storedFile) Getattr(ctx context.Context, f gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	if ip := n.open.Writer(); ip != nil {
		if _, ok := f.(*pending.Handle); ok {
			n.s.writeAttr(ip, &out.Attr)
			return 0
		}
	}
	k := n.served()
	if size, mtime, ok := n.openVersionAttr(k); ok {
		n.s.blockAttr(&out.Attr, size, mtime, n.key)
		out.SetTimeout(n.s.opts.EntryTTL)
		return 0
	}
	bi, err := n.s.store.Tiers().Stat(k)
	if rh, ok := f.(*readHandle); ok && errors.Is(err, store.ErrNotFound) {
		// Gone from the tiers while open: describe what the reader reads.
		if fi, ferr := rh.f.Stat(); ferr == nil {
			bi.Size, bi.MTime, err = fi.Size(), fi.ModTime(), nil
		}
	}
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return errnoMissing
		}
		return n.s.fail("getattr", n.key.Path(), err)
	}
	n.s.blockAttr(&out.Attr, bi.Size, bi.MTime, n.key)
	out.SetTimeout(n.s.opts.EntryTTL)
	return 0
}

// openVersionAttr is the size and mtime of what the node's open
// descriptors read, when that is not the store's file under k's name
// (vfs.Opened.VersionAttr).
func (n *storedFile) openVersionAttr(k format.Key) (size int64, mtime time.Time, ok bool) {
	return n.open.VersionAttr(n.s.store, k, func() bool { return n.superseded(k) })
}

// Setattr of a published file: new times are a use (the mtime moves to
// the time given, which is what UCM's hotness and GC and rsync read); a
// chmod of the permission bits only is accepted and changes nothing (the
// mode stays the read-only one the model gives its blocks: rsync -a and
// tar restore the source's 0644 on every run, and must not fail on it); a
// chown that changes nothing is accepted; a truncate, a chmod of the
// setuid, setgid or sticky bit, or a real change of owner is EPERM. On a
// descriptor being written it applies there.
func (n *storedFile) Setattr(ctx context.Context, f gofs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if ip := n.open.Writer(); ip != nil {
		// On a descriptor being written, or by path: the kernel truncates
		// an O_TRUNC open without its handle. One its writer's close
		// published meanwhile is changed as a published file is.
		if errno, published := n.s.setWriting(ip, in, out); !published {
			return errno
		}
	}
	sa := setAttrOf(in)
	if sa.Size != nil && registry.Of(n.served()).Replaces() {
		return n.truncate(ctx, *sa.Size, sa, out)
	}
	if err := vfs.CheckPublishedSetattr(sa, n.s.uid, n.s.gid); err != nil {
		return n.s.fail("setattr", n.key.Path(), err)
	}
	if sa.MTime != nil {
		if err := n.s.store.Tiers().SetMTime(n.served(), *sa.MTime); err != nil {
			return n.s.fail("utimes", n.key.Path(), err)
		}
	}
	return n.Getattr(ctx, f, out)
}

// Open opens the file for reading from the fastest tier holding it. An
// open for writing (or with O_TRUNC) of a published block is EACCES; of a
// published File (a files model) it starts a new version (rewrite). If the
// file went away meanwhile (evicted, or removed by another path) the open
// starts a new write of it, as a create would.
func (n *storedFile) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	key := n.served()
	if flags&syscall.O_ACCMODE != syscall.O_RDONLY || flags&syscall.O_TRUNC != 0 {
		if registry.Of(key).Replaces() {
			return n.rewrite(ctx, key)
		}
		if n.s.store.Tiers().Has(key) || n.open.Readers() > 0 {
			return nil, 0, n.s.fail("open", key.Path(), fmt.Errorf("published files are read-only: %w", vfs.ErrReadOnly))
		}
		ip, h, errno := n.s.beginWrite(callerProc(ctx), key, key.FileName(), false, flags)
		if errno != 0 {
			return nil, 0, errno
		}
		n.open.SetWriter(ip)
		return h, h.OpenFlags(), 0
	}
	uid := callerUid(ctx)
	if err := n.s.reading.Hold(uid, 1); err != nil {
		return nil, 0, n.s.fail("open", key.Path(), err)
	}
	f, level, size, id, err := n.open.Acquire(n.s.descs, key)
	if err != nil {
		n.s.reading.Free(uid, 1)
		if errors.Is(err, store.ErrNotFound) {
			_, parent := n.Parent()
			n.s.notifyGoneFrom(uid, parent, key.FileName())
			return nil, 0, errnoMissing
		}
		return nil, 0, n.s.fail("open", n.key.Path(), err)
	}
	n.s.store.Hit(key)
	n.s.store.CountOut(level, size)
	// A reader has nothing to flush: no FLUSH round trip at its close.
	h := &readHandle{node: n, f: f, own: n.s.backing.Give(ctx, id), uid: uid}
	return h, n.s.openFlags() | fuse.FOPEN_NOFLUSH, 0
}

// superseded reports whether the node is a version of the File key (the
// one it serves) that a newer one replaced (vfs.FilesNodes.Superseded).
func (n *storedFile) superseded(key format.Key) bool {
	return n.s.files.Superseded(n.s.store, n.s.inos, key, n.StableAttr().Ino)
}

// truncate is truncate(2) of a published File of a files model: a new
// version of it cut or grown to size and published at once
// (vfs.Truncate); a size it already has publishes nothing.
func (n *storedFile) truncate(ctx context.Context, size int64, sa vfs.SetAttr, out *fuse.AttrOut) syscall.Errno {
	key := n.served()
	if bi, err := n.s.store.Tiers().Stat(key); err == nil && bi.Size == size {
		n.s.blockAttr(&out.Attr, bi.Size, bi.MTime, key)
		return 0
	}
	p := callerProc(ctx)
	if op, err := vfs.Truncate(ctx, n.s.store, p, key, sa); err != nil {
		return n.s.fail(op, key.Path(), err)
	}
	// The kernel's entry for the name names this node, the old version:
	// it goes before the answer, so the caller's next stat or open of the
	// name finds the new version (bounded: replacedWait).
	_, parent := n.Parent()
	n.s.notifyGoneWithin(p.Uid, parent, key.FileName(), replacedWait)
	n.s.namesReplaced.Add(1)
	// The answer's attributes are this node's: what its open descriptors
	// read, if it has any, else the new version.
	if osize, mtime, ok := n.openVersionAttr(key); ok {
		n.s.blockAttr(&out.Attr, osize, mtime, n.key)
		return 0
	}
	n.s.blockAttr(&out.Attr, size, time.Now(), key)
	return 0
}

// rewrite opens the published File key for writing: it starts a new
// version (store.Writes.Reopen), holds it, and answers ESTALE so that the
// kernel opens it on a node of its own (vfs/reopen.go).
func (n *storedFile) rewrite(ctx context.Context, key format.Key) (gofs.FileHandle, uint32, syscall.Errno) {
	p := callerProc(ctx)
	_, d, err := n.s.store.Writes().Reopen(p, key)
	if err != nil {
		return nil, 0, n.s.fail("open", key.Path(), err)
	}
	n.s.reopens.Hold(p.Tgid, key, d)
	n.s.log.Debug("open for writing of a published file: a new version, opened on its own node", "path", key.Path(), "errno", "ESTALE")
	return nil, 0, errnoStale
}

// Access answers access(2) on a published file by its mode, 0444, except
// that W_OK is granted on a raw block to every caller (UCM's PosixStore
// looks a block up with access(F_OK|R_OK|W_OK)); a write open is still
// refused (EACCES). Root passes everything but X_OK.
func (n *blockFile) Access(ctx context.Context, mask uint32) syscall.Errno {
	switch {
	case mask&unix.X_OK != 0:
		return n.s.fail("access", n.key.Path(), fmt.Errorf("published files are not executable: %w", vfs.ErrReadOnly))
	case mask&unix.W_OK != 0 && !n.key.Kind.Headerless() && callerUid(ctx) != 0:
		return n.s.fail("access", n.key.Path(), fmt.Errorf("published files are read-only: %w", vfs.ErrReadOnly))
	}
	return 0
}

// Passthrough backing ids the daemon registers itself (light.Backing
// registers them and hands them to the OPEN reply)
//
// go-fuse registers a node's backing file at its first open and
// unregisters it at its last release. A published file keeps its
// descriptor for a while after the last close (vfs/opencache.go), and its
// backing id with it, so the daemon registers the descriptor itself and
// hands the id to the kernel in the OPEN reply: light.Bridge wraps
// go-fuse's node bridge and, after the node's Open, writes the id its
// node left for the request (light.Backing.Give, keyed by the request's
// cancel channel, which is the request's own while it runs).

// CloseKept closes the descriptor kept by keep seq, if the node still
// keeps it (vfs.Kept).
func (n *storedFile) CloseKept(seq uint64) { n.open.CloseKept(n.s.descs, seq) }

// readHeader returns the file's 64-byte header (vfs.Opened.ReadHeader).
func (n *storedFile) readHeader() ([]byte, error) {
	return n.open.ReadHeader(n.s.descs, n.key, n.served)
}

// release drops one handle's use of the shared descriptor
// (vfs.Opened.Release).
func (n *storedFile) release() { n.open.Release(n.s.descs, n, n.key) }
