// Package hashtab is an open-addressing hash table for the daemon's
// per-file tables (the tiers' indexes, the adapter's light nodes), which
// hold millions of small values. A slot is the value itself (a pointer or
// a 4-byte number), and the table is kept between 3/8 and 3/4 full, so a
// value costs 5 to 21 bytes of table; a Go map of the same keys costs the
// key, the value and a control byte per slot at up to twice the entries,
// 40 to 75 bytes here. The table never reallocates while a lookup runs and
// keeps no garbage behind but the array it outgrew.
//
// The table does not hash or compare keys itself: the caller gives the
// hash of the key it looks for and a match function, and at creation a
// function that hashes a stored value (to place it when the table grows,
// or when a deletion shifts its neighbours back). The zero value of V
// marks an empty slot and is never stored. Hashes should be seeded
// (hash/maphash) where keys come from users, so that nobody can choose
// keys that collide. A Table is not safe for concurrent use.
package hashtab

import "iter"

// minSlots is the smallest non-empty table.
const minSlots = 8

// Table is an open-addressing (linear probing) hash table of values of
// type V, the zero V marking a free slot.
type Table[V comparable] struct {
	slots []V
	n     int
	hash  func(V) uint64
}

// New returns an empty table whose values hash with hash.
func New[V comparable](hash func(V) uint64) Table[V] { return Table[V]{hash: hash} }

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
	var zero V
	if t.n == 0 {
		return zero, false
	}
	mask := uint64(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		v := t.slots[i]
		if v == zero {
			return zero, false
		}
		if match(v) {
			return v, true
		}
	}
}

// Insert adds v, which must not be the zero V nor already in the table.
func (t *Table[V]) Insert(v V) {
	if (t.n+1)*4 > len(t.slots)*3 {
		t.resize(max(minSlots, 2*len(t.slots)))
	}
	t.place(v)
	t.n++
}

// place puts v in the first free slot from its home slot.
func (t *Table[V]) place(v V) {
	var zero V
	mask := uint64(len(t.slots) - 1)
	i := t.hash(v) & mask
	for t.slots[i] != zero {
		i = (i + 1) & mask
	}
	t.slots[i] = v
}

// Delete removes and returns the value whose key hashes to h and for which
// match reports true. The values after it in its run move back, so no
// deletion mark is ever left behind; the table shrinks when it is under
// 1/8 full.
func (t *Table[V]) Delete(h uint64, match func(V) bool) (V, bool) {
	var zero V
	if t.n == 0 {
		return zero, false
	}
	mask := uint64(len(t.slots) - 1)
	i := h & mask
	for ; ; i = (i + 1) & mask {
		v := t.slots[i]
		if v == zero {
			return zero, false
		}
		if match(v) {
			break
		}
	}
	found := t.slots[i]
	// Shift back each later value of the run whose home slot is not
	// between the hole and it (cyclically): it was placed past the hole.
	for j := (i + 1) & mask; t.slots[j] != zero; j = (j + 1) & mask {
		home := t.hash(t.slots[j]) & mask
		if (j-home)&mask >= (j-i)&mask {
			t.slots[i] = t.slots[j]
			i = j
		}
	}
	t.slots[i] = zero
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
		for _, v := range t.slots {
			if v != zero && !yield(v) {
				return
			}
		}
	}
}

// resize moves the values into a table of size slots (a power of two).
func (t *Table[V]) resize(size int) {
	var zero V
	old := t.slots
	t.slots = make([]V, size)
	for _, v := range old {
		if v != zero {
			t.place(v)
		}
	}
}
