package fs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"syscall"

	"github.com/ucmfs/ucmfs/hashdir"
	"github.com/ucmfs/ucmfs/tiers"
)

// Attribute names, in listing order (docs/xattrs.md).
var (
	blockXattrs = []string{"hash", "model", "num_layers", "block_size", "dtype", "num_kv_heads", "head_dim",
		"tensors_per_layer", "payload_bytes", "crc32c", "tiers", "state", "hits", "repr", "pinned"}
	reprXattrs = []string{"hash", "model", "kind", "dtype", "num_layers", "num_kv_heads", "rows", "dim",
		"param", "payload_bytes", "crc32c", "tiers", "state", "hits"}
	rawXattrs   = []string{"hash", "model", "payload_bytes", "crc32c", "tiers", "state", "hits", "pinned"}
	modelXattrs = []string{"blocks", "bytes", "quota", "repr_kind", "layout", "group"}
)

// stackXattr answers the attributes every stored file has from the stack:
// ok is false for a name it does not know.
func (n *storedFile) stackXattr(name string) (val string, ok bool, err error) {
	u := func(v uint64) string { return strconv.FormatUint(v, 10) }
	switch name {
	case "hash":
		return n.key.ID.String(), true, nil
	case "model":
		return n.key.Model, true, nil
	case "hits":
		return u(n.s.Hits(n.key)), true, nil
	case "tiers", "state", "pinned", "payload_bytes", "crc32c":
	default:
		return "", false, nil
	}
	bi, err := n.s.stack.Stat(n.key)
	if err != nil {
		return "", true, err
	}
	switch name {
	case "tiers":
		return strings.Join(bi.Holders, ","), true, nil
	case "state":
		if bi.Dirty {
			return "dirty", true, nil
		}
		return "clean", true, nil
	case "pinned":
		if user, loading := n.s.UserPin(n.key); loading {
			bi.Pinned = user // a GPU load pins it for now; this is the user's choice
		}
		if bi.Pinned {
			return "1", true, nil
		}
		return "0", true, nil
	case "payload_bytes":
		return u(uint64(bi.Size - n.key.Kind.HeaderLen())), true, nil
	}
	if bi.HasCRC {
		return fmt.Sprintf("%08x", bi.CRC), true, nil
	}
	// The CRC is computed lazily (at write-back or on demand): ask for it.
	if crc, has, err := n.s.stack.CRC(n.key); err == nil && has {
		return fmt.Sprintf("%08x", crc), true, nil
	}
	return "", true, nil // crc32c of a file the stack has no CRC for (filled from the header below)
}

// xattrs is the attribute table of a block (of a raw block: those of the
// stack only, it has no header).
func (n *blockFile) xattrs() *xattrSet {
	names := blockXattrs
	if n.key.Kind.Raw() {
		names = rawXattrs
	}
	return &xattrSet{names: names, rw: map[string]bool{"pinned": true}, get: n.xattr, set: n.setXattr}
}

func (n *blockFile) xattr(name string) (string, error) {
	if v, ok, err := n.stackXattr(name); ok && (err != nil || v != "") {
		return v, err
	}
	if n.key.Kind.Raw() {
		return "", errNoAttr
	}
	if name == "repr" {
		return n.reprKind()
	}
	b, err := n.readHeader()
	if err != nil {
		return "", err
	}
	h, err := hashdir.DecodeBlockHeader(b)
	if err != nil {
		return "", fmt.Errorf("%s: %w: %w", n.key, tiers.ErrCorrupt, err)
	}
	u := func(v uint32) string { return strconv.FormatUint(uint64(v), 10) }
	switch name {
	case "num_layers":
		return u(h.NumLayers), nil
	case "block_size":
		return u(h.BlockSize), nil
	case "dtype":
		return h.Dtype.String(), nil
	case "num_kv_heads":
		return u(h.NumKVHeads), nil
	case "head_dim":
		return u(h.HeadDim), nil
	case "tensors_per_layer":
		if h.Opaque() {
			return "0", nil // an opaque block has no K/V layout
		}
		return u(h.Tensors()), nil
	case "crc32c":
		return fmt.Sprintf("%08x", h.PayloadCRC), nil
	}
	return "", errNoAttr
}

// reprKind names the kind of the block's sidecar, "" when it has none.
func (n *blockFile) reprKind() (string, error) {
	side := tiers.Key{Model: n.key.Model, ID: n.key.ID, Kind: hashdir.Repr}
	h, err := n.s.stack.Open(side)
	if errors.Is(err, tiers.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	defer h.File.Close()
	b := make([]byte, hashdir.HeaderSize)
	if _, err := io.ReadFull(io.NewSectionReader(h.File, 0, hashdir.HeaderSize), b); err != nil {
		return "", err
	}
	rh, err := hashdir.DecodeReprHeader(b)
	if err != nil {
		return "", fmt.Errorf("%s: %w: %w", side, tiers.ErrCorrupt, err)
	}
	return rh.Kind.String(), nil
}

func (n *blockFile) setXattr(name, value string) error {
	pin, err := parseBool(value)
	if err != nil {
		return err
	}
	return n.s.SetUserPin(n.key, pin)
}

// Getxattr serves user.ucm.* of a block.
func (n *blockFile) Getxattr(ctx context.Context, attr string, dest []byte) (uint32, syscall.Errno) {
	return n.s.getxattr(n.xattrs(), n.key.Path(), attr, dest)
}

// Setxattr writes user.ucm.pinned (0 or 1); the others are read-only.
func (n *blockFile) Setxattr(ctx context.Context, attr string, data []byte, flags uint32) syscall.Errno {
	return n.s.setxattr(n.xattrs(), n.key.Path(), attr, data)
}

// Removexattr is refused: the attributes always exist.
func (n *blockFile) Removexattr(ctx context.Context, attr string) syscall.Errno {
	return n.s.removexattr(n.xattrs(), n.key.Path(), attr)
}

// Listxattr lists user.ucm.* of a block.
func (n *blockFile) Listxattr(ctx context.Context, dest []byte) (uint32, syscall.Errno) {
	return listxattr(n.xattrs(), dest)
}

// xattrs is the attribute table of a sidecar (all read-only).
func (n *reprFile) xattrs() *xattrSet {
	return &xattrSet{names: reprXattrs, get: n.xattr}
}

func (n *reprFile) xattr(name string) (string, error) {
	if errno := n.ensure("getxattr"); errno != 0 {
		return "", errno
	}
	if v, ok, err := n.stackXattr(name); ok && (err != nil || v != "") {
		return v, err
	}
	b, err := n.readHeader()
	if err != nil {
		return "", err
	}
	h, err := hashdir.DecodeReprHeader(b)
	if err != nil {
		return "", fmt.Errorf("%s: %w: %w", n.key, tiers.ErrCorrupt, err)
	}
	u := func(v uint32) string { return strconv.FormatUint(uint64(v), 10) }
	switch name {
	case "kind":
		return h.Kind.String(), nil
	case "dtype":
		return h.Dtype.String(), nil
	case "num_layers":
		return u(h.NumLayers), nil
	case "num_kv_heads":
		return u(h.NumKVHeads), nil
	case "rows":
		return u(h.Rows), nil
	case "dim":
		return u(h.Dim), nil
	case "param":
		return u(h.Param), nil
	case "crc32c":
		return fmt.Sprintf("%08x", h.PayloadCRC), nil
	}
	return "", errNoAttr
}

// Getxattr serves user.ucm.* of a sidecar.
func (n *reprFile) Getxattr(ctx context.Context, attr string, dest []byte) (uint32, syscall.Errno) {
	return n.s.getxattr(n.xattrs(), n.key.Path(), attr, dest)
}

// Setxattr is refused: a sidecar's attributes are read-only.
func (n *reprFile) Setxattr(ctx context.Context, attr string, data []byte, flags uint32) syscall.Errno {
	return n.s.setxattr(n.xattrs(), n.key.Path(), attr, data)
}

// Removexattr is refused: the attributes always exist.
func (n *reprFile) Removexattr(ctx context.Context, attr string) syscall.Errno {
	return n.s.removexattr(n.xattrs(), n.key.Path(), attr)
}

// Listxattr lists user.ucm.* of a sidecar.
func (n *reprFile) Listxattr(ctx context.Context, dest []byte) (uint32, syscall.Errno) {
	return listxattr(n.xattrs(), dest)
}

// xattrs is the attribute table of a model directory.
func (m *modelNode) xattrs() *xattrSet {
	return &xattrSet{names: modelXattrs, rw: map[string]bool{"quota": true, "repr_kind": true, "layout": true, "group": true},
		get: func(name string) (string, error) {
			switch name {
			case "blocks":
				return strconv.FormatInt(m.s.Usage(m.model).Blocks, 10), nil
			case "bytes":
				return strconv.FormatInt(m.s.Usage(m.model).Bytes, 10), nil
			case "repr_kind":
				return m.s.ModelRepr(m.model).String(), nil
			case "layout":
				return m.s.Layout(m.model), nil
			case "group":
				return m.s.ModelGroup(m.model).String(), nil
			}
			return strconv.FormatInt(m.s.Quota(m.model), 10), nil
		},
		set: func(name, value string) error {
			switch name {
			case "repr_kind":
				return m.s.SetReprKind(m.model, value)
			case "layout":
				if err := m.s.SetLayout(m.model, strings.TrimSpace(value)); err != nil {
					return err
				}
				// The kernel may hold entries of the other layout's shard
				// directories: drop them (in the background: it holds this
				// directory's lock until the request is answered).
				go func() {
					for name := range m.Children() {
						m.NotifyEntry(name)
					}
				}()
				return nil
			case "group":
				return m.s.SetModelGroup(m.model, value)
			}
			n, err := parseBytes(value)
			if err != nil {
				return err
			}
			return m.s.SetQuota(m.model, n)
		}}
}

// Getxattr serves user.ucm.blocks, bytes, quota, repr_kind, layout and
// group of a model.
func (m *modelNode) Getxattr(ctx context.Context, attr string, dest []byte) (uint32, syscall.Errno) {
	return m.s.getxattr(m.xattrs(), m.model, attr, dest)
}

// Setxattr writes user.ucm.quota (bytes, 0 = none), user.ucm.repr_kind
// (the kind of sidecar derived; "default" takes the mount's),
// user.ucm.layout (ucmb or ucm-posix, while the model is empty) and
// user.ucm.group (a KV-cache group kind, "" clears it); all four are kept
// in the model's settings record.
func (m *modelNode) Setxattr(ctx context.Context, attr string, data []byte, flags uint32) syscall.Errno {
	return m.s.setxattr(m.xattrs(), m.model, attr, data)
}

// Removexattr is refused: the attributes always exist.
func (m *modelNode) Removexattr(ctx context.Context, attr string) syscall.Errno {
	return m.s.removexattr(m.xattrs(), m.model, attr)
}

// Listxattr lists user.ucm.* of a model.
func (m *modelNode) Listxattr(ctx context.Context, dest []byte) (uint32, syscall.Errno) {
	return listxattr(m.xattrs(), dest)
}
