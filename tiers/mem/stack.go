package mem

import (
	"os"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/tiers/index"
	"github.com/ucmfs/ucmfs/tiers/rootfs"
	"golang.org/x/sys/unix"
)

// What the stack asks of the memory tier beyond the Tier interface and
// its exported methods: its index, which holds the dirty and pinned
// flags the stack decides from, and its root. The stack goes through
// these methods only; the tier's fields are its own.

// Index is the tier's index of its files, with their dirty and pinned
// flags.
func (t *Tier) Index() *index.Index { return t.idx }

// Root is the tier's private directory, held: its files are reached
// beneath it, through no link.
func (t *Tier) Root() rootfs.FS { return t.fs }

// OpenUntouched opens key's published file read-only, whether the index
// holds it or not, without counting a use (no LRU touch, unlike Open).
func (t *Tier) OpenUntouched(key format.Key) (*os.File, error) {
	return t.openKey(key, unix.O_RDONLY)
}
