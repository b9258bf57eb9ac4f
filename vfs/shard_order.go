package vfs

import (
	"strings"

	"github.com/ucmfs/ucmfs/format"
)

// A shard lists a block's sidecar before the block: unlinking a block
// removes its sidecar too, and rm -r, find -delete and Python's
// shutil.rmtree unlink in the listing's order, so a sidecar listed after
// its block was gone (ENOENT) by the time they came to it.

// KindOrder orders two files of one id: the sidecar first.
func KindOrder(a, b format.Kind) int { return extOrder(a.Ext(), b.Ext()) }

// NameOrder orders a shard's names: by the name before the extension,
// then as extOrder.
func NameOrder(a, b string) int {
	sa, ea := splitExt(a)
	sb, eb := splitExt(b)
	if c := strings.Compare(sa, sb); c != 0 {
		return c
	}
	return extOrder(ea, eb)
}

// extOrder orders the extensions of one name: a sidecar's (".repr")
// first, then the others by their text.
func extOrder(a, b string) int {
	repr := format.Repr.Ext()
	switch {
	case a == b:
		return 0
	case a == repr:
		return -1
	case b == repr:
		return 1
	}
	return strings.Compare(a, b)
}

// splitExt splits name at its last dot (ext "" where it has none).
func splitExt(name string) (stem, ext string) {
	if i := strings.LastIndexByte(name, '.'); i > 0 {
		return name[:i], name[i:]
	}
	return name, ""
}
