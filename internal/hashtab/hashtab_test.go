package hashtab

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// check compares t with want: the same values, each found by its hash.
func check(t *testing.T, tab *Table[uint32], want map[uint32]bool, hash func(uint32) uint64) {
	t.Helper()
	if tab.Len() != len(want) {
		t.Fatalf("Len %d, want %d", tab.Len(), len(want))
	}
	got := slices.Sorted(tab.All())
	if len(got) != len(want) {
		t.Fatalf("All yields %d values, want %d", len(got), len(want))
	}
	for _, v := range got {
		if !want[v] {
			t.Fatalf("All yields %d, which is not in the table", v)
		}
		if f, ok := tab.Find(hash(v), func(x uint32) bool { return x == v }); !ok || f != v {
			t.Fatalf("Find(%d) = %d, %v", v, f, ok)
		}
	}
}

// TestAgainstMap runs random inserts and deletes against a Go map, with a
// good hash and with hashes that put many values on the same slots (long
// runs, wrapping around the end of the table).
func TestAgainstMap(t *testing.T) {
	hashes := map[string]func(uint32) uint64{
		"mixed":    func(v uint32) uint64 { return uint64(v) * 0x9E3779B97F4A7C15 },
		"clusters": func(v uint32) uint64 { return uint64(v % 5) },
		"high":     func(v uint32) uint64 { return ^uint64(0) - uint64(v%3) },
	}
	for name, hash := range hashes {
		t.Run(name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, 2))
			var tab Table[uint32]
			want := map[uint32]bool{}
			for step := 0; step < 20000; step++ {
				v := uint32(r.IntN(300) + 1)
				match := func(x uint32) bool { return x == v }
				if want[v] {
					if got, ok := tab.Delete(hash(v), match); !ok || got != v {
						t.Fatalf("step %d: Delete(%d) = %d, %v", step, v, got, ok)
					}
					delete(want, v)
				} else {
					if _, ok := tab.Delete(hash(v), match); ok {
						t.Fatalf("step %d: Delete(%d) of an absent value found one", step, v)
					}
					tab.Insert(hash(v), v)
					want[v] = true
				}
				if step%97 == 0 {
					check(t, &tab, want, hash)
				}
			}
			check(t, &tab, want, hash)
		})
	}
}

// TestShrinkAndReserve checks that the table frees its slots when emptied,
// shrinks when sparse and does not grow after Reserve.
func TestShrinkAndReserve(t *testing.T) {
	hash := func(v uint32) uint64 { return uint64(v) * 0x9E3779B97F4A7C15 }
	var tab Table[uint32]
	tab.Reserve(1000)
	size := len(tab.slots)
	for v := uint32(1); v <= 1000; v++ {
		tab.Insert(hash(v), v)
	}
	if len(tab.slots) != size {
		t.Fatalf("the table grew from %d to %d slots after Reserve(1000)", size, len(tab.slots))
	}
	for v := uint32(1); v <= 990; v++ {
		tab.Delete(hash(v), func(x uint32) bool { return x == v })
	}
	if len(tab.slots) >= size/4 {
		t.Fatalf("%d slots for 10 values", len(tab.slots))
	}
	for v := uint32(991); v <= 1000; v++ {
		tab.Delete(hash(v), func(x uint32) bool { return x == v })
	}
	if tab.slots != nil || tab.Len() != 0 {
		t.Fatalf("an empty table keeps %d slots", len(tab.slots))
	}
}

// BenchmarkFind measures a hit among 10^6 values, in random order,
// against a Go map.
func BenchmarkFind(b *testing.B) {
	const n = 1 << 20
	hash := func(v uint32) uint64 { return uint64(v) * 0x9E3779B97F4A7C15 }
	order := rand.New(rand.NewPCG(3, 4)).Perm(n)
	b.Run("hashtab", func(b *testing.B) {
		var tab Table[uint32]
		for v := uint32(1); v <= n; v++ {
			tab.Insert(hash(v), v)
		}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			v := uint32(order[i%n] + 1)
			if _, ok := tab.Find(hash(v), func(x uint32) bool { return x == v }); !ok {
				b.Fatal("missing")
			}
		}
	})
	b.Run("map", func(b *testing.B) {
		m := make(map[uint32]uint32)
		for v := uint32(1); v <= n; v++ {
			m[v] = v
		}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if _, ok := m[uint32(order[i%n]+1)]; !ok {
				b.Fatal("missing")
			}
		}
	})
}
