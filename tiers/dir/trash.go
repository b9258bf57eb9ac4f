package dir

import (
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/ucmfs/ucmfs/tiers/tier"
)

// The deferred removals of a directory tier: a user's removal opens the
// file O_PATH, unlinks its name and answers; a reaper goroutine closes
// the descriptor, and the kernel frees the file at that last reference.
//
// Why: an ext4 unlink of a file written back frees its blocks (and, on a
// disk mounted with discard, waits for their discard) when the inode is
// evicted: 90-220 µs for a 4 KiB file here, against 9-20 µs for the
// removal of the name alone while a descriptor holds the inode (and 24-42
// µs for the rename into a trash directory that earlier versions made).
// An engine that clears its cache (SGLang's clear(), an rm -r) removes
// thousands of files one round trip after another; the name's removal
// is what it waits for, the freeing runs beside.
//
// Why this is safe: the name is gone when the removal answers, so a
// daemon killed before the reaper ran does not find the file again at
// start, and the kernel closes a killed daemon's descriptors, which frees
// the files. Nothing is left to clean. Earlier versions renamed removed
// files into <root>/.trash/ instead; a tier removes what they left there
// at start (the rebuild does not enter '.' directories at the root).
//
// Only a local tier (nvme) defers: a shared filesystem frees the file on
// the server either way, and a reaper blocked on a stalled server would
// hold the tier's close.
//
// Bounds: the reaper holds at most trashQueue descriptors and the bytes
// of trashBytes(capacity); a removal past either unlinks in place, so the
// files waiting hold a bounded share of the disk (which the index already
// counts as free) and of the process's descriptors.

// trashDirName is the trash directory earlier versions made at a tier's
// root.
const trashDirName = ".trash"

// trashQueue is how many removed files wait for the reaper at most: held
// descriptors, so also at most a quarter of the descriptor limit.
func trashQueue() int {
	var rl unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &rl) != nil {
		return 1024
	}
	return int(min(4096, rl.Cur/4))
}

// trashBytes is how many bytes of removed files wait for the reaper at
// most in a tier of capacity bytes: a 16th of it, between 64 MiB and
// 1 GiB.
func trashBytes(capacity int64) int64 { return min(max(capacity/16, 64<<20), 1<<30) }

// dirTrash is a tier's deferred removals: its reaper's queue.
type dirTrash struct {
	queue  chan held // nil: the tier unlinks in place
	bytes  atomic.Int64
	reaped atomic.Int64 // files the reaper freed (tests, stats)
}

// held is a removed file's descriptor (O_PATH), with its size.
type held struct {
	fd   int
	size int64
}

// startTrash starts the reaper, which first removes what earlier versions
// left in the trash directory (both in the background, until Close).
func (t *Tier) startTrash() {
	t.trash.queue = make(chan held, trashQueue())
	t.wg.Add(1)
	go t.reap()
}

// reap closes the removals' descriptors, after removing an earlier
// version's trash directory; at Close it closes what still waits.
func (t *Tier) reap() {
	defer t.wg.Done()
	tr := &t.trash
	t.removeOldTrash() // removals wait in the queue meanwhile
	for {
		select {
		case <-t.stop:
			tr.drain()
			return
		case f := <-tr.queue:
			tr.free(f)
		}
	}
}

// removeOldTrash removes the trash directory an earlier version left, a
// file at a time so that Close need not wait for all of it (the next
// start goes on).
func (t *Tier) removeOldTrash() {
	ents, err := t.fs.ReadDirAll(trashDirName)
	if err != nil {
		return // none (or unreadable: left as it is)
	}
	for _, name := range ents {
		if t.closed.Load() {
			return
		}
		_ = t.fs.RemoveAll(trashDirName + "/" + name)
	}
	_ = t.fs.Rmdir(trashDirName)
}

// free closes f's descriptor, which frees the file.
func (tr *dirTrash) free(f held) {
	if unix.Close(f.fd) == nil {
		tr.reaped.Add(1)
	}
	tr.bytes.Add(-f.size)
}

// unlink takes the file at path p, of size bytes, out of the tier: its
// name at once and the file when the reaper closes the descriptor held
// for it, or in place when the reaper has no room. ENOENT when p is
// gone.
func (t *Tier) unlink(p string, size int64) error {
	tr := &t.trash
	if tr.queue == nil || len(tr.queue) == cap(tr.queue) || tr.bytes.Load()+size > trashBytes(t.idx.Usage().Capacity) {
		return t.fs.Unlink(p)
	}
	fd, err := t.fs.OpenFD(p, unix.O_PATH, 0)
	if err != nil {
		if tier.IsENOENT(err) {
			return err
		}
		return t.fs.Unlink(p)
	}
	if err := t.fs.Unlink(p); err != nil {
		unix.Close(fd)
		return err
	}
	tr.bytes.Add(size)
	select {
	case tr.queue <- held{fd, size}:
	default:
		tr.free(held{fd, size})
	}
	if t.closed.Load() { // the reaper may have drained the queue for the last time
		tr.drain()
	}
	return nil
}

// drain frees what waits in the queue, without waiting for more.
func (tr *dirTrash) drain() {
	for {
		select {
		case f := <-tr.queue:
			tr.free(f)
		default:
			return
		}
	}
}

// TrashReaped is how many removed files the reaper has freed this run.
func (t *Tier) TrashReaped() int64 { return t.trash.reaped.Load() }
