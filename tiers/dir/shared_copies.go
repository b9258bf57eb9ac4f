package dir

import (
	"sync"
	"time"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/layout/registry"
	"golang.org/x/sys/unix"
)

// A name of a shared directory can hold two files at once on a
// filesystem whose rename is not atomic across its servers: GlusterFS's
// distribute layer (DHT) keeps a file's data on the brick it was written
// on and a pointer on the brick its name hashes to, and two hosts
// replacing one name at about the same time (each one's write-back
// superseding the other's version, shared_replace.go) can leave the data
// file of the version replaced on its brick, unseen while the name
// resolves to the other. Removing the name then removes the file it
// resolves to, and the other comes back: host A removed a File and found
// the earlier version under its name at once (an engine that stores only
// what is missing, as SGLang's does, then skipped its store), and every
// host served that earlier version for good (TestSharedFSEngines on
// GlusterFS, about one run in three).
//
// So a user's removal of a File (a name that takes new versions) from a
// shared tier looks at the name again once its file is gone, and removes
// what it finds there that was published no later than the removal
// began (the file's mtime: a shared file's is its publish time): the
// removal takes every version published before it, as an unlink on a
// local disk does. A version published after it began (by another host)
// stays: the last publish wins. At most removedCopiesMax more files go,
// each with one WARN line (rate-limited by the daemon's log). A block
// layout's name is its contents: a second copy of a block is the same
// bytes, and is left as it is.
//
// A copy can also come back later, when another client of the share
// looks the name up by the file it knew (DHT then restores the name's
// pointer to the data file left on its brick): so the removal is
// remembered for removedHold, and a version found at the name in that
// time that was published no later than the removal began is taken for
// removed (looked up: not found). This host then publishes its next
// version of the name over it as over any other host's older version.
// Only hidden, not removed again: a host's clock behind this one's could
// date a version published after the removal before it, and hiding it
// here costs one more write-back at most.

// removedCopiesMax bounds the further removals of one removal.
const removedCopiesMax = 4

// removedHold is how long a removal of a File hides the versions
// published before it; removalsMax bounds the removals remembered.
const (
	removedHold = 30 * time.Second
	removalsMax = 4096
)

// removals are the recent removals of Files from a shared tier, by key:
// when each began.
type removals struct {
	mu sync.Mutex
	m  map[format.Key]time.Time
}

// record remembers a removal of key that began at began.
func (r *removals) record(key format.Key, began time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil || len(r.m) >= removalsMax {
		r.m = make(map[format.Key]time.Time) // the oldest go with the rest: a bound, not a cache
	}
	r.m[key] = began
}

// hides reports whether a version of key published at mtime was removed:
// a removal of key that began at or after mtime, less than removedHold
// ago.
func (r *removals) hides(key format.Key, mtime time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	began, ok := r.m[key]
	if ok && time.Since(began) >= removedHold {
		delete(r.m, key)
		return false
	}
	return ok && !mtime.After(began)
}

// removeCopies removes what key's name still holds after a removal that
// began at began took a file from it, or found none there, and remembers
// the removal (see above).
func (t *sharedDir) removeCopies(key format.Key, began time.Time) {
	if !registry.Of(key).Replaces() {
		return
	}
	t.removed.record(key, began)
	p := key.Path()
	for range removedCopiesMax {
		var st unix.Stat_t
		if err := t.do("stat", func() error { return t.fs.Lstat(p, &st) }, nil); err != nil ||
			st.Mode&unix.S_IFMT != unix.S_IFREG || statMTime(&st).After(began) {
			return
		}
		if err := t.do("remove", func() error { return t.fs.Unlink(p) }, nil); err != nil {
			return
		}
		t.log.Warn("shared tier: a removed name held another file, an earlier version (the filesystem kept two files under one name); removed too",
			"kind", t.kind, "dir", t.root, "path", p, "mtime", statMTime(&st), "removal", began)
	}
}
