package vfs

import (
	"context"
	"sync"
	"time"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/store"
)

// A published File of a files model opened for writing (`echo x > f`,
// `>>`, an O_RDWR open) is a new version of it (store.Writes.Reopen), and it
// needs a node of its own: the kernel takes one passthrough backing file
// per node and refuses any open of a node that has one unless it passes
// that same file (EINVAL, seen as EIO), so a reader of the published
// version and the writer of the new one cannot share the node. The open
// on the published node therefore starts the new version, holds it with a
// descriptor kept here, and answers ESTALE: the kernel looks the name up
// again, and that lookup finds the caller's own file being written (a
// pending node, fs/filesdir's Ops.Lookup), whose open joins it and takes the held
// descriptor's place (Take). A held descriptor nobody takes (a caller
// that does not retry) is released after reopenHold, which drops the
// unwritten version.

// reopenHold is how long a descriptor waits for the open that retries.
const reopenHold = 5 * time.Second

// reopenKey is a caller's new version of a File.
type reopenKey struct {
	tgid uint32
	key  format.Key
}

// Reopens are the descriptors held for the opens that retry.
type Reopens struct {
	mu   sync.Mutex
	held map[reopenKey]*store.Writer
}

// Hold keeps d, the descriptor of tgid's new version of key, until Take
// or reopenHold; a descriptor held before for the same is released.
func (r *Reopens) Hold(tgid uint32, key format.Key, d *store.Writer) {
	k := reopenKey{tgid, key}
	r.mu.Lock()
	if r.held == nil {
		r.held = make(map[reopenKey]*store.Writer)
	}
	old := r.held[k]
	r.held[k] = d
	r.mu.Unlock()
	if old != nil {
		old.Release(context.Background())
	}
	time.AfterFunc(reopenHold, func() { r.release(k, d) })
}

// Take releases the descriptor held for tgid's new version of key, once
// its open has a descriptor of its own.
func (r *Reopens) Take(tgid uint32, key format.Key) {
	k := reopenKey{tgid, key}
	r.mu.Lock()
	d := r.held[k]
	r.mu.Unlock()
	if d != nil {
		r.release(k, d)
	}
}

// release releases d if it is still the one held for k.
func (r *Reopens) release(k reopenKey, d *store.Writer) {
	r.mu.Lock()
	mine := r.held[k] == d
	if mine {
		delete(r.held, k)
	}
	r.mu.Unlock()
	if mine {
		d.Release(context.Background())
	}
}
