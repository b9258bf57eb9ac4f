package tiers

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// The trash of a directory tier: a removal renames the file into
// <root>/.trash/ and answers; a reaper goroutine unlinks it there.
//
// Why: an unlink on ext4 of a file written back (its blocks allocated,
// with an xattr) frees its blocks in the journal, 160 µs a 4 KiB file
// here, against 27 µs for a rename into another directory of the same
// filesystem. An engine that clears its cache (SGLang's clear(), an rm
// -r) removes thousands of files one round trip after another; the
// rename is what it waits for, the unlink runs beside.
//
// Why a rename rather than answering before the unlink: once the rename
// returns the file is gone from its name, so a daemon killed before the
// reaper ran does not find it again at start (a removed file must not
// come back). The rebuild does not enter '.' directories at the root
// (layoutWalk), and a tier emptying its trash at start removes what a
// killed daemon left there.
//
// Only a local tier (nvme) has a trash: on a shared filesystem a rename
// is a server round trip as an unlink is, and a reaper blocked on a
// stalled server would hold the tier's close.
//
// Bounds: the reaper's queue holds trashQueue names and the bytes of
// trashBytes(capacity); a removal past either unlinks in place (as
// before), so the trash holds a bounded share of the disk, which the index
// already counts as free. A rename that fails (EXDEV: a model directory on
// another filesystem) unlinks in place too.

// trashDirName is the trash directory at a tier's root.
const trashDirName = ".trash"

// trashQueue is how many trashed files wait for the reaper at most.
const trashQueue = 1 << 16

// trashBytes is how many bytes of trashed files wait for the reaper at
// most in a tier of capacity bytes: a 16th of it, between 64 MiB and
// 1 GiB.
func trashBytes(capacity int64) int64 { return min(max(capacity/16, 64<<20), 1<<30) }

// dirTrash is a tier's trash: its directory and its reaper's queue.
type dirTrash struct {
	dir    string // <root>/.trash; "" when it could not be made
	prefix string // this run's names: <prefix><seq>
	seq    atomic.Uint64
	queue  chan trashed
	bytes  atomic.Int64 // bytes of the files in queue
	reaped atomic.Int64 // files the reaper unlinked (tests, stats)
}

// trashed is a file in the trash, with its size.
type trashed struct {
	path string
	size int64
}

// startTrash makes the trash directory, empties what an earlier run left
// there and starts the reaper (both in the background, until Close).
func (t *DirTier) startTrash() {
	tr := &t.trash
	dir := filepath.Join(t.root, trashDirName)
	if err := os.Mkdir(dir, 0o700); err != nil && !os.IsExist(err) {
		t.log.Warn("no trash directory: removals unlink in place", "tier", t.kind, "err", err)
		return
	}
	tr.prefix = strconv.FormatInt(time.Now().UnixNano(), 36) + "-"
	tr.queue = make(chan trashed, trashQueue)
	tr.dir = dir
	t.wg.Add(1)
	go t.reap()
}

// reap unlinks what the removals trash, after the trash of earlier runs.
func (t *DirTier) reap() {
	defer t.wg.Done()
	tr := &t.trash
	if ents, err := os.ReadDir(tr.dir); err == nil {
		for _, e := range ents {
			if t.closed.Load() {
				return
			}
			if !strings.HasPrefix(e.Name(), tr.prefix) {
				_ = unix.Unlink(filepath.Join(tr.dir, e.Name()))
			}
		}
	}
	for {
		select {
		case <-t.stop:
			return
		case f := <-tr.queue:
			if err := unix.Unlink(f.path); err == nil {
				tr.reaped.Add(1)
			}
			tr.bytes.Add(-f.size)
		}
	}
}

// unlink takes the file at path p, of size bytes, out of the tier: into
// the trash when the reaper has room for it, else in place. ENOENT when
// p is gone.
func (t *DirTier) unlink(p string, size int64) error {
	tr := &t.trash
	if tr.dir == "" || len(tr.queue) == cap(tr.queue) || tr.bytes.Load()+size > trashBytes(t.idx.Usage().Capacity) {
		return unix.Unlink(p)
	}
	to := filepath.Join(tr.dir, tr.prefix+strconv.FormatUint(tr.seq.Add(1), 36))
	if err := unix.Rename(p, to); err != nil {
		if isENOENT(err) {
			return err
		}
		return unix.Unlink(p)
	}
	tr.bytes.Add(size)
	select {
	case tr.queue <- trashed{to, size}:
	default:
		tr.bytes.Add(-size)
		if err := unix.Unlink(to); err == nil {
			tr.reaped.Add(1)
		}
	}
	return nil
}

// TrashReaped is how many removed files the reaper has unlinked from
// the trash this run.
func (t *DirTier) TrashReaped() int64 { return t.trash.reaped.Load() }
