package store

import (
	"crypto/md5"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/ucmfs/ucmfs/format"
)

// The model of the store soak (soak_test.go): what docs/semantics.md
// lets a read of each name give. Every version written, of any name, has
// bytes of its own and a number of its own (soakBook.next), in the order
// they were made; a version belongs to a lineage, the file it was
// written as, which a move of the file or of its directory carries to
// another name. A read tells which version it served, or that it served
// none (torn, or bytes never written).

// soakBook numbers the versions of the soak and knows them by their bytes.
type soakBook struct {
	next    int
	byHash  map[[32]byte]int // a version's bytes: its number
	lineage map[int]int      // a version's lineage
	lines   int              // lineages made
}

// soakName is one name of the soak and what may be read under it.
type soakName struct {
	key format.Key
	lin int // the lineage the name holds now
	// now: the versions a read may give now (-1: none, ErrNotFound).
	now []int
	// floor: after a power cut, a version of lin at or after floor (the
	// last acknowledged durable) may be there, and none only if absentOK.
	floor    int
	absentOK bool
	// hist: lineages the name held since the disk was last known
	// durable; after a power cut, with absentOK, any of their versions
	// may be back (a removal or a move undone).
	hist map[int]bool
}

// soakModels are the soak's models, one of each layout.
const (
	soakUCMB  = "ucmb-m"
	soakPosix = "posix-m"
	soakFiles = "files-m"
)

// soakNames builds the soak's names: ucmb blocks, raw blocks of a
// ucm-posix model (three shard widths), files of a files model in three
// directories (d0, d1 and e0, where a directory moves to and back).
func (b *soakBook) soakNames() []*soakName {
	var ns []*soakName
	add := func(k format.Key) { ns = append(ns, b.fresh(k)) }
	for i := range 6 {
		add(format.Key{Model: soakUCMB, ID: format.ID(md5.Sum(fmt.Appendf(nil, "b%d", i)))})
	}
	for i := range 6 {
		add(format.Key{Model: soakPosix, ID: format.ID(md5.Sum(fmt.Appendf(nil, "r%d", i))), Kind: format.RawKind(i % 3)})
	}
	for _, d := range soakDirs {
		for i := range 3 {
			add(format.FileKey(soakFiles, fmt.Sprintf("%s/f%d.bin", d, i)))
		}
	}
	return ns
}

// soakDirs are the directories of the files model.
var soakDirs = []string{"d0", "d1", "e0"}

// fresh is a name that holds nothing, with a lineage of its own.
func (b *soakBook) fresh(k format.Key) *soakName {
	b.lines++
	return &soakName{key: k, lin: b.lines, now: []int{-1}, absentOK: true, hist: map[int]bool{b.lines: true}}
}

// version makes the bytes of n's next version (its size drawn from r).
func (b *soakBook) version(n *soakName, r *rand.Rand) (int, []byte) {
	b.next++
	v := b.next
	data := make([]byte, 1+r.IntN(40<<10))
	pr := rand.New(rand.NewPCG(r.Uint64(), uint64(v)))
	for i := range data {
		data[i] = byte(pr.Uint32())
	}
	if n.key.Kind == format.Block {
		h := format.BlockHeader{ID: n.key.ID, NumLayers: 1, BlockSize: 1, Dtype: format.Uint8, TensorsPerLayer: 1}
		data = format.NewBlock(h, data)
	}
	b.byHash[sha256.Sum256(data)] = v
	b.lineage[v] = n.lin
	return v, data
}

// which is the version whose bytes data are (-2: none).
func (b *soakBook) which(data []byte) int {
	if v, ok := b.byHash[sha256.Sum256(data)]; ok {
		return v
	}
	return -2
}

// published: version v was published (acknowledged), durable or not.
func (n *soakName) published(v int, durable bool) {
	n.now = []int{v}
	if durable {
		n.durable(v)
	}
}

func (n *soakName) durable(v int) {
	n.floor = max(n.floor, v)
	n.absentOK = false
}

// maybe: an operation that failed may have done what it was asked (v;
// -1 a removal), or not.
func (n *soakName) maybe(v int) {
	if !slices.Contains(n.now, v) {
		n.now = append(n.now, v)
	}
	if v < 0 {
		n.absentOK = true
	}
}

// removed: the name was removed (acknowledged).
func (n *soakName) removed() {
	n.now = []int{-1}
	n.absentOK = true
}

// flushed: a flush of the name returned: what a read gives now is durable.
func (n *soakName) flushed() {
	if len(n.now) == 1 && n.now[0] >= 0 {
		n.durable(n.now[0])
	}
}

// movedTo: the file under n moved to the name to (acknowledged): to
// holds n's lineage and what n promised, n nothing (a removal).
func (n *soakName) movedTo(to *soakName, b *soakBook) {
	to.lin, to.now, to.floor, to.absentOK = n.lin, n.now, n.floor, n.absentOK
	to.hist[n.lin] = true
	n.leave(b)
	n.removed()
}

// leave gives n a lineage of its own again: its file left the name.
func (n *soakName) leave(b *soakBook) {
	b.lines++
	n.lin = b.lines
	n.hist[n.lin] = true
}

// mayMove: a move of n to to failed: either may hold n's file now.
func (n *soakName) mayMove(to *soakName) {
	to.hist[n.lin] = true
	to.now = append(to.now, n.now...)
	to.absentOK = true
	n.maybe(-1)
}

// reads reports whether a read may give v now.
func (n *soakName) reads(v int) bool { return slices.Contains(n.now, v) }

// afterCut reports whether v (-1: nothing) may be read after a power
// cut, or a close that could not write everything back, and makes it
// what is there now. restored: a power cut, after which what is there is
// durable.
func (n *soakName) afterCut(v int, b *soakBook, restored bool) bool {
	lin := b.lineage[v]
	ok := v == -1 && n.absentOK || v >= 0 && lin == n.lin && v >= n.floor || v >= 0 && n.absentOK && n.hist[lin]
	n.now = []int{v}
	if v >= 0 && lin != n.lin {
		n.lin = lin
	}
	if !restored {
		return ok
	}
	n.hist = map[int]bool{n.lin: true}
	if v >= 0 {
		n.floor, n.absentOK = v, false
	} else {
		n.floor, n.absentOK = 0, true
	}
	return ok
}
