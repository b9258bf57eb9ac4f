package store

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/layout/registry"
	"github.com/ucmfs/ucmfs/tiers"
)

// The user.ucm.* attributes of blocks, sidecars and models
// (docs/xattrs.md): their names, their values, and which are writable.
// A front end serves them (package fs as extended attributes).

// ErrNoAttr: an attribute the file or model does not have.
var ErrNoAttr = errors.New("no such attribute")

// Attribute names, in listing order.
var (
	blockAttrNames = []string{"hash", "model", "num_layers", "block_size", "dtype", "num_kv_heads", "head_dim",
		"tensors_per_layer", "payload_bytes", "crc32c", "tiers", "state", "hits", "repr", "pinned"}
	reprAttrNames = []string{"hash", "model", "kind", "dtype", "num_layers", "num_kv_heads", "rows", "dim",
		"param", "payload_bytes", "crc32c", "tiers", "state", "hits"}
	rawAttrNames   = []string{"hash", "model", "payload_bytes", "crc32c", "tiers", "state", "hits", "pinned"}
	modelAttrNames = []string{"blocks", "bytes", "quota", "repr_kind", "layout", "group", "key_pattern"}
)

// Attrs is the attribute table of one file or model: the names in
// listing order, how to read each, and which are writable.
type Attrs struct {
	Names    []string
	Writable map[string]bool
	Get      func(name string) (string, error)
	Set      func(name, value string) error // nil when none is writable
}

// Has reports whether name is in the table.
func (a *Attrs) Has(name string) bool {
	for _, n := range a.Names {
		if n == name {
			return true
		}
	}
	return false
}

// FileAttrs is the table of the published file k. header returns the
// file's 64-byte header (the front end may cache it: a file is immutable).
func (s *Store) FileAttrs(k format.Key, header func() ([]byte, error)) *Attrs {
	switch {
	case registry.Of(k).IsSidecar(k):
		return &Attrs{Names: reprAttrNames, Get: func(name string) (string, error) { return s.reprAttr(k, name, header) }}
	case k.Kind.Headerless():
		return &Attrs{Names: rawAttrNames, Writable: map[string]bool{"pinned": true},
			Get: func(name string) (string, error) { return s.blockAttr(k, name, header) }, Set: s.pinSetter(k)}
	}
	return &Attrs{Names: blockAttrNames, Writable: map[string]bool{"pinned": true},
		Get: func(name string) (string, error) { return s.blockAttr(k, name, header) }, Set: s.pinSetter(k)}
}

// pinSetter writes user.ucm.pinned (0 or 1).
func (s *Store) pinSetter(k format.Key) func(name, value string) error {
	return func(name, value string) error {
		pin, err := ParseBool(value)
		if err != nil {
			return err
		}
		return s.SetUserPin(k, pin)
	}
}

// stackAttr answers the attributes every stored file has from the stack:
// ok is false for a name it does not know.
func (s *Store) stackAttr(k format.Key, name string) (val string, ok bool, err error) {
	u := func(v uint64) string { return strconv.FormatUint(v, 10) }
	switch name {
	case "hash":
		return k.ID.String(), true, nil
	case "model":
		return k.Model, true, nil
	case "hits":
		return u(s.Hits(k)), true, nil
	case "tiers", "state", "pinned", "payload_bytes", "crc32c":
	default:
		return "", false, nil
	}
	bi, err := s.stack.Stat(k)
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
		if user, loading := s.UserPin(k); loading {
			bi.Pinned = user // a GPU load pins it for now; this is the user's choice
		}
		if bi.Pinned {
			return "1", true, nil
		}
		return "0", true, nil
	case "payload_bytes":
		return u(uint64(bi.Size - k.Kind.HeaderLen())), true, nil
	}
	if bi.HasCRC {
		return fmt.Sprintf("%08x", bi.CRC), true, nil
	}
	// The CRC is computed lazily (at write-back or on demand): ask for it.
	if crc, has, err := s.stack.CRC(k); err == nil && has {
		return fmt.Sprintf("%08x", crc), true, nil
	}
	return "", true, nil // a file the stack has no CRC for (filled from the header)
}

// blockAttr is one attribute of a block (of a raw block: those of the
// stack only, it has no header).
func (s *Store) blockAttr(k format.Key, name string, header func() ([]byte, error)) (string, error) {
	if v, ok, err := s.stackAttr(k, name); ok && (err != nil || v != "") {
		return v, err
	}
	if k.Kind.Headerless() {
		return "", ErrNoAttr
	}
	if name == "repr" {
		return s.reprKindOf(k)
	}
	b, err := header()
	if err != nil {
		return "", err
	}
	h, err := format.DecodeBlockHeader(b)
	if err != nil {
		return "", fmt.Errorf("%s: %w: %w", k, tiers.ErrCorrupt, err)
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
	return "", ErrNoAttr
}

// reprKindOf names the kind of block k's stored sidecar, "" when it has
// none.
func (s *Store) reprKindOf(k format.Key) (string, error) {
	side, ok := registry.Of(k).Sidecar(k)
	if !ok {
		return "", nil
	}
	h, err := s.stack.Open(side)
	if errors.Is(err, tiers.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	defer h.File.Close()
	b := make([]byte, format.HeaderSize)
	if _, err := io.ReadFull(io.NewSectionReader(h.File, 0, format.HeaderSize), b); err != nil {
		return "", err
	}
	rh, err := format.DecodeReprHeader(b)
	if err != nil {
		return "", fmt.Errorf("%s: %w: %w", side, tiers.ErrCorrupt, err)
	}
	return rh.Kind.String(), nil
}

// reprAttr is one attribute of a sidecar.
func (s *Store) reprAttr(k format.Key, name string, header func() ([]byte, error)) (string, error) {
	if v, ok, err := s.stackAttr(k, name); ok && (err != nil || v != "") {
		return v, err
	}
	b, err := header()
	if err != nil {
		return "", err
	}
	h, err := format.DecodeReprHeader(b)
	if err != nil {
		return "", fmt.Errorf("%s: %w: %w", k, tiers.ErrCorrupt, err)
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
	return "", ErrNoAttr
}

// Attrs is the table of a model directory for the user uid: blocks
// and bytes, and the settings quota, repr_kind, layout, group and
// key_pattern (writable, kept in the model's settings record; the quota
// as uid may change it: Models.SetQuota).
//
// A files model has pinned too: its root's directory pin (dir_pins.go).
func (ms Models) Attrs(model string, uid uint32) *Attrs {
	names, writable := modelAttrNames, map[string]bool{"quota": true, "repr_kind": true, "layout": true, "group": true, "key_pattern": true}
	if ms.LayoutOf(model).Tree() {
		names, writable["pinned"] = append(slices.Clone(names), "pinned"), true
	}
	return &Attrs{Names: names, Writable: writable,
		Get: func(name string) (string, error) {
			switch name {
			case "pinned":
				return boolAttr(ms.s.DirPinned(model, "")), nil
			case "blocks":
				return strconv.FormatInt(ms.Usage(model).Blocks, 10), nil
			case "bytes":
				return strconv.FormatInt(ms.Usage(model).Bytes, 10), nil
			case "repr_kind":
				return ms.s.Sidecars().Setting(model).String(), nil
			case "layout":
				return ms.Layout(model), nil
			case "group":
				return ms.Group(model).String(), nil
			case "key_pattern":
				return ms.s.keyPatternAttr(model), nil
			}
			return strconv.FormatInt(ms.s.quota(model), 10), nil
		},
		Set: func(name, value string) error {
			switch name {
			case "pinned":
				return ms.s.dirPinSetter(model, "")(name, value)
			case "repr_kind":
				return ms.s.setReprKind(model, value)
			case "layout":
				return ms.s.setLayout(model, strings.TrimSpace(value))
			case "group":
				return ms.SetGroup(model, value)
			case "key_pattern":
				return ms.s.setKeyPattern(model, value)
			}
			n, err := ParseBytes(value)
			if err != nil {
				return err
			}
			return ms.SetQuota(model, n, uid)
		}}
}

// DirAttrs is the table of a directory below a files model's root:
// pinned, its directory pin (dir_pins.go).
func (s *Store) DirAttrs(model, dir string) *Attrs {
	return &Attrs{Names: []string{"pinned"}, Writable: map[string]bool{"pinned": true},
		Get: func(string) (string, error) { return boolAttr(s.DirPinned(model, dir)), nil },
		Set: s.dirPinSetter(model, dir)}
}

// dirPinSetter writes user.ucm.pinned (0 or 1) of directory dir of the
// files model ("" is its root).
func (s *Store) dirPinSetter(model, dir string) func(name, value string) error {
	return func(_, value string) error {
		pin, err := ParseBool(value)
		if err != nil {
			return err
		}
		return s.SetDirPin(model, dir, pin)
	}
}

// boolAttr is a 0/1 attribute value.
func boolAttr(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// ParseBool parses a 0/1 attribute value.
func ParseBool(v string) (bool, error) {
	switch v {
	case "0":
		return false, nil
	case "1":
		return true, nil
	}
	return false, fmt.Errorf("value %q is not 0 or 1: %w", v, ErrInvalid)
}

// ParseBytes parses a non-negative decimal byte count.
func ParseBytes(v string) (int64, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("value %q is not a byte count: %w", v, ErrInvalid)
	}
	return n, nil
}
