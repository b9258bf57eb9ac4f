package bench

import (
	"testing"

	"github.com/ucmfs/ucmfs/tiers"
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
// id is new; the blocks are removed once the timing is over. Its base is
// disk_sync, the same bytes written to the nvme directory and
// fdatasync'd, in the same round.
func BenchmarkMountWrite2MiB(b *testing.B) {
	runTargetsOf(b, true, func(b *testing.B, t *target) {
		model := modelFor(b)
		t.prepare(b, model)
		blk := newBlock(bigBlock)
		var written []string
		b.SetBytes(bigBlock)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			written = writeNew(b, t, model, blk, written)
		}
		b.StopTimer()
		t.dropBatch(b, written)
	})
}

// writeNew writes blk as a new block of model on t (plain open, write,
// close) and returns written with its path appended.
func writeNew(b *testing.B, t *target, model string, blk *block, written []string) []string {
	id := nextID()
	p := blockPath(t.root, model, id)
	if err := writeBlockSync(p, blk.setID(id), t.sync); err != nil {
		b.Fatal(err)
	}
	return append(written, p)
}

// burstBlocks is the size of a write burst, in 2 MiB blocks: 3/4 of the
// shared daemons' dirty background threshold (their --dirty-background is
// the default, a share of the memory tier), so a burst is absorbed in
// memory with no write-back running.
const burstBlocks = sharedMemoryBytes * tiers.DefaultDirtyBackgroundPercent / 100 * 3 / 4 / bigBlock

// BenchmarkMountWriteBurst2MiB times bursts of new blocks, each burst
// below the daemon's dirty background threshold: open(O_CREAT|O_EXCL|
// O_WRONLY), write 2 MiB, close, burstBlocks times. One iteration is one
// burst; after its timing its blocks are removed (dirty ones are dropped
// with them), so every burst finds the memory tier clean, as an engine's
// burst does when the write-back of the previous one is done.
func BenchmarkMountWriteBurst2MiB(b *testing.B) {
	runTargets(b, func(b *testing.B, t *target) {
		model := modelFor(b)
		t.prepare(b, model)
		blk := newBlock(bigBlock)
		written := make([]string, 0, burstBlocks)
		b.SetBytes(burstBlocks * bigBlock)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			for j := 0; j < burstBlocks; j++ {
				written = writeNew(b, t, model, blk, written)
			}
			b.StopTimer()
			written = t.dropBatch(b, written)
			b.StartTimer()
		}
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
