package vfs

import "github.com/ucmfs/ucmfs/format"

// DirListing is the listing an open directory of a files model holds,
// entries of type E (the adapter's), read by offset: an entry's offset
// is its position plus one. The adapter takes it at the first read and
// again at a rewind (offset 0), under its own lock.
type DirListing[E any] struct {
	ents  []E
	pos   int
	taken bool
	// The published files' keys: ents[nsub+i] is files[i]. byKey says
	// they may serve READDIRPLUS's lookups: the listing was taken while
	// no directory move began or ended, moves is DirMoves.Seq then.
	files []format.Key
	nsub  int
	byKey bool
	moves uint64
}

// Take holds a new listing: ents, of which ents[nsub+i] names files[i],
// taken at DirMoves.Seq moves; byKey when no directory move began or
// ended meanwhile.
func (l *DirListing[E]) Take(ents []E, files []format.Key, nsub int, byKey bool, moves uint64) {
	*l = DirListing[E]{ents: ents, files: files, nsub: nsub, byKey: byKey, moves: moves, taken: true}
}

// Drop forgets the listing, and says how many entries it held.
func (l *DirListing[E]) Drop() int {
	n := len(l.ents)
	*l = DirListing[E]{}
	return n
}

// Taken reports whether a listing is held.
func (l *DirListing[E]) Taken() bool { return l.taken }

// Next is the next entry and its offset, nil at the end.
func (l *DirListing[E]) Next() (*E, uint64) {
	if l.pos >= len(l.ents) {
		return nil, 0
	}
	e := &l.ents[l.pos]
	l.pos++
	return e, uint64(l.pos)
}

// Seek moves to offset off; false past the end.
func (l *DirListing[E]) Seek(off uint64) bool {
	if off > uint64(len(l.ents)) {
		return false
	}
	l.pos = int(off)
	return true
}

// LastFile is the entry Next returned last when it is a published file
// the listing may serve lookups by key for, with its key and the
// DirMoves.Seq the listing was taken at.
func (l *DirListing[E]) LastFile() (e *E, key format.Key, moves uint64, ok bool) {
	i := l.pos - 1 - l.nsub
	if !l.byKey || i < 0 || i >= len(l.files) {
		return nil, format.Key{}, 0, false
	}
	return &l.ents[l.pos-1], l.files[i], l.moves, true
}
