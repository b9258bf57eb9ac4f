package bench

import (
	"testing"
)

const (
	// readSet is how many 2 MiB blocks a read benchmark cycles through
	// (64 MiB: more than the CPU caches hold).
	readSet = 32
)

// BenchmarkMountWrite2MiB times what an engine does to store a block:
// open(O_CREAT|O_EXCL|O_WRONLY), write 2 MiB, close. Through the mount the
// close publishes the block (validation, CRC-32C, commit into the memory
// tier); the daemon's write-back to the nvme tier runs in the background
// during the timed writes, as it does in service: nothing pauses the
// timer to let it catch up, so once the run passes the memory tier the
// writer waits for write-back and the figure is the sustained one. Every
// id is new; the blocks are removed once the timing is over.
func BenchmarkMountWrite2MiB(b *testing.B) {
	runTargets(b, func(b *testing.B, t *target) {
		model := modelFor(b)
		t.prepare(b, model)
		blk := newBlock(bigBlock)
		var written []string
		b.SetBytes(bigBlock)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			id := nextID()
			p := blockPath(t.root, model, id)
			if err := writeBlock(p, blk.setID(id)); err != nil {
				b.Fatal(err)
			}
			written = append(written, p)
		}
		b.StopTimer()
		t.dropBatch(b, written)
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
