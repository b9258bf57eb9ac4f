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
	lin int // the lineage a write to the name writes
	// now: the versions a read may give now (-1: none, ErrNotFound).
	now []int
	// hist: after a power cut, the lineages whose versions may be there,
	// each from its floor on (the last acknowledged durable of it; 0:
	// any), and none only if absentOK. A version acknowledged durable
	// leaves its own lineage alone there; a removal, or a file moved in
	// that was not durable, leaves the others (undone by the cut).
	hist     map[int]int
	absentOK bool
	changes  int // operations of the soak that changed or may have changed it
}

// soakMove is a move of a durable file that failed: after a power cut
// its lineage, from its floor on, is under one of the two names, unless
// either was changed since.
type soakMove struct {
	from, to               *soakName
	lin, floor             int
	fromChanges, toChanges int
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
	return &soakName{key: k, lin: b.lines, now: []int{-1}, absentOK: true, hist: map[int]int{b.lines: 0}}
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

// durable: v is acknowledged durable: after a power cut, v or a later
// version of its lineage.
func (n *soakName) durable(v int) {
	n.hist = map[int]int{n.lin: v}
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
// holds n's lineage and what n promised (Writes.Move makes the file
// durable under to when it was durable, before n goes; one that was not
// may leave to as it was, after a power cut), n nothing (a removal).
func (n *soakName) movedTo(to *soakName, b *soakBook) {
	to.lin, to.now = n.lin, n.now
	if n.absentOK {
		to.hist[n.lin] = 0
	} else {
		to.hist, to.absentOK = map[int]int{n.lin: n.hist[n.lin]}, false
	}
	n.leave(b)
	n.removed()
}

// leave gives n a lineage of its own again: its file left the name.
func (n *soakName) leave(b *soakBook) {
	b.lines++
	n.lin = b.lines
	n.hist[n.lin] = 0
}

// mayMove: a move of n to to failed: either may hold n's file now. A
// durable file is under one of them after a power cut (soakMove).
func (n *soakName) mayMove(to *soakName) *soakMove {
	var m *soakMove
	if !n.absentOK {
		m = &soakMove{from: n, to: to, lin: n.lin, floor: n.hist[n.lin], fromChanges: n.changes + 1, toChanges: to.changes + 1}
	}
	to.hist[n.lin] = 0
	to.now = append(to.now, n.now...)
	n.maybe(-1)
	return m
}

// holds reports whether the move's file is under one of its names, or
// either was changed since the move.
func (m *soakMove) holds(b *soakBook) bool {
	if m.from.changes != m.fromChanges || m.to.changes != m.toChanges {
		return true
	}
	for _, n := range []*soakName{m.from, m.to} {
		if v := n.now[0]; v >= 0 && b.lineage[v] == m.lin && v >= m.floor {
			return true
		}
	}
	return false
}

// took: a read gave v, of another lineage than n's (a move that failed
// took place): n holds that lineage now.
func (n *soakName) took(v int, b *soakBook) {
	if lin := b.lineage[v]; v >= 0 && lin != n.lin {
		n.lin = lin
		if _, ok := n.hist[lin]; !ok {
			n.hist[lin] = 0
		}
	}
}

// reads reports whether a read may give v now.
func (n *soakName) reads(v int) bool { return slices.Contains(n.now, v) }

// afterCut reports whether v (-1: nothing) may be read after a power
// cut, or a close that could not write everything back, and makes it
// what is there now. restored: a power cut, after which what is there is
// durable.
func (n *soakName) afterCut(v int, b *soakBook, restored bool) bool {
	floor, known := n.hist[b.lineage[v]]
	ok := v == -1 && n.absentOK || v >= 0 && known && v >= floor
	n.now = []int{v}
	n.took(v, b)
	switch {
	case !restored:
	case v >= 0:
		n.durable(v)
	default:
		n.hist, n.absentOK = map[int]int{n.lin: 0}, true
	}
	return ok
}
