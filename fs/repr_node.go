package fs

import (
	"context"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/fs/ino"
	"github.com/ucmfs/ucmfs/vfs"
)

// The sidecar node's answers for a sidecar that is derivable but not yet
// stored (repr_derive.go): its attributes come from the block's header,
// and the first open or attribute read derives and stores it.

var (
	_ = (gofs.NodeGetattrer)((*reprFile)(nil))
	_ = (gofs.NodeOpener)((*reprFile)(nil))
)

// derivedEntry answers a lookup of a sidecar that is derivable but not
// stored: the node of its key, with the derived size and its block's
// publish time. Nothing is cached by the kernel (timeouts 0) until the
// sidecar is stored: the model's kind may change, or an engine may write
// its own sidecar first, and either changes the size.
func (d *shardNode) derivedEntry(ctx context.Context, key format.Key, size int64, mtime time.Time, out *fuse.EntryOut) *gofs.Inode {
	ino := d.s.inos.Acquire(ino.FileName(key))
	ch := newChild(ctx, &d.Inode, key.FileName(), ino, syscall.S_IFREG, func() gofs.InodeEmbedder {
		return newStoredNode(d.s, key, ino)
	})
	d.s.blockAttr(&out.Attr, size, mtime, key)
	ttl(out, 0)
	return ch
}

// Getattr describes a stored sidecar as storedFile does, and a derivable
// one by its derived size (not cached by the kernel).
func (n *reprFile) Getattr(ctx context.Context, f gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	if f == nil && !n.s.store.Tiers().Has(n.key) {
		size, mtime, ok, err := n.s.store.Sidecars().Derivable(n.key)
		if err != nil {
			return n.s.fail("getattr", n.key.Path(), err)
		}
		if ok {
			n.s.blockAttr(&out.Attr, size, mtime, n.key)
			out.SetTimeout(0)
			return 0
		}
	}
	return n.storedFile.Getattr(ctx, f, out)
}

// Open of a derivable sidecar for reading derives and stores it first;
// then, and for every other open, as storedFile.Open.
func (n *reprFile) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	if flags&syscall.O_ACCMODE == syscall.O_RDONLY && flags&syscall.O_TRUNC == 0 {
		if errno := n.ensure("open"); errno != 0 {
			return nil, 0, errno
		}
	}
	return n.storedFile.Open(ctx, flags)
}

// ensure derives and stores the sidecar if it is derivable and not
// stored (vfs.EnsureSidecar); an underivable block or a failed
// derivation is refused (with one log line).
func (n *storedFile) ensure(op string) syscall.Errno {
	if err := vfs.EnsureSidecar(n.s.store, n.key); err != nil {
		return n.s.fail(op, n.key.Path(), err)
	}
	return 0
}
