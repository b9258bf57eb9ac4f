package bench

import (
	"testing"
)

const (
	// writeBatch is how many blocks a write benchmark writes before an
	// untimed pause that waits for the daemon's write-back and removes
	// them, which keeps memory and disk use bounded.
	writeBatch = 32
	// readSet is how many 2 MiB blocks a read benchmark cycles through
	// (64 MiB: more than the CPU caches hold).
	readSet = 32
)

// BenchmarkMountWrite2MiB times what an engine does to store a block:
// open(O_CREAT|O_EXCL|O_WRONLY), write 2 MiB, close. Through the mount the
// close publishes the block (validation, CRC-32C, commit into the memory
// tier); the daemon's write-back to the nvme tier runs in the background
// during the timed writes, as it does in service. Every id is new.
func BenchmarkMountWrite2MiB(b *testing.B) {
	runTargets(b, func(b *testing.B, t *target) {
		model := modelFor(b)
		t.prepare(b, model)
		blk := newBlock(bigBlock)
		batch := make([]string, 0, writeBatch)
		clear := func() { batch = t.dropBatch(b, batch) }
		b.SetBytes(bigBlock)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if len(batch) == writeBatch {
				b.StopTimer()
				clear()
				b.StartTimer()
			}
			id := nextID()
			p := blockPath(t.root, model, id)
			if err := writeBlock(p, blk.setID(id)); err != nil {
				b.Fatal(err)
			}
			batch = append(batch, p)
		}
		b.StopTimer()
		clear()
	})
}

// BenchmarkMountRead2MiB times open, read of the whole 2 MiB block (one
// read(2) of 2 MiB, repeated until full), close, over a set of published
// blocks. Through the mount the blocks are in the memory tier (written
// back to the nvme tier before the timing starts); the plain directories
// serve them from the page cache.
func BenchmarkMountRead2MiB(b *testing.B) {
	runTargets(b, func(b *testing.B, t *target) {
		paths := t.set(b, "read", readSet, bigBlock)
		buf := make([]byte, bigBlock)
		for _, p := range paths { // one untimed pass: every file opened once
			if err := readBlock(p, buf); err != nil {
				b.Fatal(err)
			}
		}
		b.SetBytes(bigBlock)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if err := readBlock(paths[i%readSet], buf); err != nil {
				b.Fatal(err)
			}
		}
	})
}
