package fs

import (
	"context"
	"maps"
	"slices"
	"syscall"

	"github.com/ucmfs/ucmfs/layout/registry"
	"github.com/ucmfs/ucmfs/store"
)

// The user.ucm.* attributes of blocks, sidecars and models: the store
// names and computes them (store.Attrs); these nodes serve them.

// xattrs is the attribute table of a published file: a block's, or a
// sidecar's (all read-only), which is derived and stored first if it is
// derivable.
func (n *storedFile) xattrs() *store.Attrs {
	a := n.s.store.FileAttrs(n.served(), n.readHeader)
	if !registry.Of(n.key).IsSidecar(n.key) {
		return a
	}
	get := a.Get
	a.Get = func(name string) (string, error) {
		if errno := n.ensure("getxattr"); errno != 0 {
			return "", errno
		}
		return get(name)
	}
	return a
}

// Getxattr serves user.ucm.* of a published file.
func (n *storedFile) Getxattr(ctx context.Context, attr string, dest []byte) (uint32, syscall.Errno) {
	return n.s.getxattr(n.xattrs(), n.key.Path(), attr, dest)
}

// Setxattr writes a block's user.ucm.pinned (0 or 1); the others, and a
// sidecar's, are read-only.
func (n *storedFile) Setxattr(ctx context.Context, attr string, data []byte, flags uint32) syscall.Errno {
	return n.s.setxattr(n.xattrs(), n.key.Path(), attr, data)
}

// Removexattr is refused: the attributes always exist.
func (n *storedFile) Removexattr(ctx context.Context, attr string) syscall.Errno {
	return n.s.removexattr(n.xattrs(), n.key.Path(), attr)
}

// Listxattr lists user.ucm.* of a published file.
func (n *storedFile) Listxattr(ctx context.Context, dest []byte) (uint32, syscall.Errno) {
	return n.s.listxattr(n.xattrs(), dest)
}

// xattrs is the attribute table of a model directory. A change of
// layout drops the kernel's entries of the other layout's shard
// directories: those the node has when the layout changes, not what the
// new layout makes after it (in the background: the kernel holds this
// directory's lock until the request is answered).
func (m *modelNode) xattrs(ctx context.Context) *store.Attrs {
	a := m.s.store.Models().Attrs(m.model, callerUid(ctx))
	set := a.Set
	a.Set = func(name, value string) error {
		if err := set(name, value); err != nil || name != "layout" {
			return err
		}
		old := slices.Collect(maps.Keys(m.Children()))
		go func() {
			for _, name := range old {
				m.NotifyEntry(name)
			}
		}()
		return nil
	}
	return a
}

// Getxattr serves user.ucm.blocks, bytes, quota, repr_kind, layout and
// group of a model.
func (m *modelNode) Getxattr(ctx context.Context, attr string, dest []byte) (uint32, syscall.Errno) {
	return m.s.getxattr(m.xattrs(ctx), m.model, attr, dest)
}

// Setxattr writes user.ucm.quota (bytes, 0 = none), user.ucm.repr_kind
// (the kind of sidecar derived; "default" takes the mount's),
// user.ucm.layout (ucmb, ucm-posix or files, while the model is empty) and
// user.ucm.group (a KV-cache group kind, "" clears it); all four are kept
// in the model's settings record.
//
// A quota is the admin's: root or the daemon's user sets, raises and
// clears it; a model's owner may only lower it (set one where there is
// none, or a smaller one), so a tenant cannot lift what the admin set
// (store.SetQuota).
func (m *modelNode) Setxattr(ctx context.Context, attr string, data []byte, flags uint32) syscall.Errno {
	if errno := m.s.checkModelOwner(ctx, m.model, attr); errno != 0 {
		return errno
	}
	return m.s.setxattr(m.xattrs(ctx), m.model, attr, data)
}

// Removexattr is refused: the attributes always exist.
func (m *modelNode) Removexattr(ctx context.Context, attr string) syscall.Errno {
	if errno := m.s.checkModelOwner(ctx, m.model, attr); errno != 0 {
		return errno
	}
	return m.s.removexattr(m.xattrs(ctx), m.model, attr)
}

// Listxattr lists user.ucm.* of a model.
func (m *modelNode) Listxattr(ctx context.Context, dest []byte) (uint32, syscall.Errno) {
	return m.s.listxattr(m.xattrs(ctx), dest)
}
