package index

import (
	"crypto/md5"
	"encoding/binary"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/ucmfs/ucmfs/format"
)

// benchIndex returns an index of n blocks of one model and their keys,
// in random order.
func benchIndex(b *testing.B, n int) (*Index, []format.Key) {
	b.Helper()
	x := New(1 << 62)
	keys := make([]format.Key, n)
	es := make([]*Entry, n)
	for i := range keys {
		var seed [8]byte
		binary.LittleEndian.PutUint64(seed[:], uint64(i))
		keys[i] = format.Key{Model: "m", ID: format.ID(md5.Sum(seed[:])), Kind: format.Block}
		es[i] = NewEntry(keys[i], 1088, time.Time{}, 0, false)
	}
	x.AdoptAll(es)
	rand.New(rand.NewPCG(1, 2)).Shuffle(n, func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	return x, keys
}

// BenchmarkIndexGet measures a lookup of a recorded key's entry (hit) and
// of an absent key (miss) among 10^6 entries, in random order: the work
// of a first stat and of a stat of a missing id, per tier.
func BenchmarkIndexGet(b *testing.B) {
	x, keys := benchIndex(b, 1_000_000)
	b.Run("hit", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if _, ok := x.Get(keys[i%len(keys)]); !ok {
				b.Fatal("missing")
			}
		}
	})
	b.Run("miss", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			k := keys[i%len(keys)]
			k.ID[15] ^= 0x5a
			if _, ok := x.Get(k); ok {
				b.Fatal("found")
			}
		}
	})
}
