package tiers

import (
	"crypto/md5"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/ucmfs/ucmfs/format"
)

// soakKey is one name of the soak, and what docs/semantics.md lets a
// read of it give. Version v of a key has bytes of its own (soakBytes),
// so a read tells which version it served, or that it served none.
type soakKey struct {
	key  format.Key
	hash map[[32]byte]int // the bytes of every version published, attempted or not
	next int              // the next version's number
	// now: the versions a read may give now (-1: none, ErrNotFound).
	now []int
	// floor: after a power cut, a version at or after floor (the last
	// acknowledged durable) may be there, and none only if absentOK.
	floor    int
	absentOK bool
}

// soakKeys builds the soak's names: ucmb blocks, raw blocks of a
// ucm-posix model (two shard widths), files of a files model.
func soakKeys() []*soakKey {
	var ks []*soakKey
	add := func(k format.Key) {
		ks = append(ks, &soakKey{key: k, hash: map[[32]byte]int{}, now: []int{-1}, floor: 0, absentOK: true})
	}
	for i := range 8 {
		add(format.Key{Model: "ucmb", ID: format.ID(md5.Sum(fmt.Appendf(nil, "b%d", i)))})
	}
	for i := range 6 {
		add(format.Key{Model: "posix", ID: format.ID(md5.Sum(fmt.Appendf(nil, "r%d", i))), Kind: format.RawKind(i % 3)})
	}
	for i := range 6 {
		add(format.FileKey("files", fmt.Sprintf("d%d/f%d.bin", i%2, i)))
	}
	return ks
}

// version makes the bytes of k's next version (its size drawn from r)
// and records them.
func (k *soakKey) version(r *rand.Rand) (int, []byte) {
	v := k.next
	k.next++
	payload := 1 + r.IntN(48<<10)
	data := make([]byte, payload)
	pr := rand.New(rand.NewPCG(r.Uint64(), uint64(v)))
	for i := range data {
		data[i] = byte(pr.Uint32())
	}
	if k.key.Kind == format.Block {
		h := format.BlockHeader{ID: k.key.ID, NumLayers: 1, BlockSize: 1, Dtype: format.Uint8, TensorsPerLayer: 1}
		data = format.NewBlock(h, data)
	}
	k.hash[sha256.Sum256(data)] = v
	return v, data
}

// which is the version whose bytes b are (-2: none of them: torn, or
// another key's).
func (k *soakKey) which(b []byte) int {
	if v, ok := k.hash[sha256.Sum256(b)]; ok {
		return v
	}
	return -2
}

// published: version v was published (acknowledged), durable or not.
func (k *soakKey) published(v int, durable bool) {
	k.now = []int{v}
	if durable {
		k.durable(v)
	}
}

// durable: v is acknowledged durable.
func (k *soakKey) durable(v int) {
	k.floor = max(k.floor, v)
	k.absentOK = false
}

// maybe: an operation that failed may have done what it was asked (v,
// -1 a removal), or not.
func (k *soakKey) maybe(v int) {
	if !slices.Contains(k.now, v) {
		k.now = append(k.now, v)
	}
	if v < 0 {
		k.absentOK = true
	}
}

// removed: the name was removed (acknowledged): a read finds nothing;
// after a power cut the removal may be undone.
func (k *soakKey) removed() {
	k.now = []int{-1}
	k.absentOK = true
}

// flushed: Flush returned: what a read gives now is durable.
func (k *soakKey) flushed() {
	if len(k.now) == 1 && k.now[0] >= 0 {
		k.durable(k.now[0])
	}
}

// afterCut reports whether v (-1: nothing) may be read after a power
// cut, or a close that could not write everything back, and makes it
// what is there now. After a power cut (restored) it is all durable: the
// restored directory is. After a failed close it is not: what was
// durable stays the floor.
func (k *soakKey) afterCut(v int, restored bool) bool {
	ok := v == -1 && k.absentOK || v >= 0 && v >= k.floor
	k.now = []int{v}
	switch {
	case !restored:
	case v >= 0:
		k.floor, k.absentOK = v, false
	default:
		k.floor, k.absentOK = 0, true
	}
	return ok
}
