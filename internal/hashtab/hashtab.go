// Package hashtab is an open-addressing hash table for the daemon's
// per-file tables (the tiers' indexes, the adapter's light nodes), which
// hold millions of small values. A slot is the value itself (a pointer or
// a 4-byte number) and 32 bits of its key's hash, and the table is kept
// between 3/8 and 3/4 full: a pointer costs 21 to 43 bytes of table, a
// 4-byte value 11 to 21, where a Go map of the same keys took the key, the
// value and a control byte per slot at up to twice the entries (37 to 75
// bytes for the index). The hash bits in the slot let a lookup skip every
// value whose key cannot match without following it (a cache miss each),
// and let the table grow and shift values without hashing them again.
//
// The table does not hash or compare keys itself: the caller gives the
// hash of the key and a match function for the values whose hash bits
// agree. The zero value of V marks an empty slot and is never stored.
// Hashes should be seeded (hash/maphash) where keys come from users, so
// that nobody can choose keys that collide. The zero Table is empty and
// ready. A Table is not safe for concurrent use.
package hashtab

import "iter"

// minSlots is the smallest non-empty table.
const minSlots = 8

// slot is one place of the table: a value and the low 32 bits of its
// key's hash (its home slot is those bits masked by the table's size).
type slot[V comparable] struct {
	v V
	h uint32
}

// Table is an open-addressing (linear probing) hash table of values of
// type V, the zero V marking a free slot.
type Table[V comparable] struct {
	slots []slot[V]
	n     int
}

// Len returns the number of values in the table.
func (t *Table[V]) Len() int { return t.n }

// Reserve grows the table so that it holds n values without growing again.
func (t *Table[V]) Reserve(n int) {
	size := minSlots
	for size*3 < n*4 {
		size *= 2
	}
	if size > len(t.slots) {
		t.resize(size)
	}
}

// Find returns the value whose key hashes to h and for which match
// reports true.
func (t *Table[V]) Find(h uint64, match func(V) bool) (V, bool) {
	i, ok := t.find(h, match)
	if !ok {
		var zero V
		return zero, false
	}
	return t.slots[i].v, true
}

// find returns the slot of the value Find looks for.
func (t *Table[V]) find(h uint64, match func(V) bool) (uint64, bool) {
	if t.n == 0 {
		return 0, false
	}
	var zero V
	h32 := uint32(h)
	mask := uint64(len(t.slots) - 1)
	for i := uint64(h32) & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.v == zero {
			return 0, false
		}
		if s.h == h32 && match(s.v) {
			return i, true
		}
	}
}

// Insert adds v, whose key hashes to h. v must not be the zero V nor
// already in the table.
func (t *Table[V]) Insert(h uint64, v V) {
	if (t.n+1)*4 > len(t.slots)*3 {
		t.resize(max(minSlots, 2*len(t.slots)))
	}
	t.place(slot[V]{v: v, h: uint32(h)})
	t.n++
}

// place puts s in the first free slot from its home slot.
func (t *Table[V]) place(s slot[V]) {
	var zero V
	mask := uint64(len(t.slots) - 1)
	i := uint64(s.h) & mask
	for t.slots[i].v != zero {
		i = (i + 1) & mask
	}
	t.slots[i] = s
}

// Delete removes and returns the value whose key hashes to h and for which
// match reports true. The values after it in its run move back, so no
// deletion mark is ever left behind; the table shrinks when it is under
// 1/8 full.
func (t *Table[V]) Delete(h uint64, match func(V) bool) (V, bool) {
	var zero V
	i, ok := t.find(h, match)
	if !ok {
		return zero, false
	}
	found := t.slots[i].v
	// Shift back each later value of the run whose home slot is not
	// between the hole and it (cyclically): it was placed past the hole.
	mask := uint64(len(t.slots) - 1)
	for j := (i + 1) & mask; t.slots[j].v != zero; j = (j + 1) & mask {
		home := uint64(t.slots[j].h) & mask
		if (j-home)&mask >= (j-i)&mask {
			t.slots[i] = t.slots[j]
			i = j
		}
	}
	t.slots[i] = slot[V]{}
	t.n--
	switch {
	case t.n == 0:
		t.slots = nil
	case len(t.slots) > minSlots && t.n*8 < len(t.slots):
		t.resize(len(t.slots) / 2)
	}
	return found, true
}

// All yields every value, in no particular order. The table must not
// change during the iteration.
func (t *Table[V]) All() iter.Seq[V] {
	return func(yield func(V) bool) {
		var zero V
		for _, s := range t.slots {
			if s.v != zero && !yield(s.v) {
				return
			}
		}
	}
}

// resize moves the values into a table of size slots (a power of two).
func (t *Table[V]) resize(size int) {
	var zero V
	old := t.slots
	t.slots = make([]slot[V], size)
	for _, s := range old {
		if s.v != zero {
			t.place(s)
		}
	}
}
