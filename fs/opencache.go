package fs

import (
	"container/list"
	"sync"
	"time"

	"github.com/ucmfs/ucmfs/store"
)

// Descriptors kept after the last close
//
// Every open of a published file used to open its tier file and, with
// passthrough, register it with the kernel (FUSE_DEV_IOC_BACKING_OPEN);
// the last close unregistered and closed it. UCM loads a block with four
// threads that each open, read and close it, so one load paid that two or
// three times. Now a node keeps its descriptor and backing id for
// idleKeep after its last close: an open in that time hands the kernel
// the same id, without an openat or an ioctl, once the stack confirms
// (tiers.Stack.Reuse, no syscall) that the descriptor still reads the
// block's current file on the tier the read path would choose, and counts
// the open as a read there.
//
// What is kept is bounded: at most idleMaxFiles descriptors, of which
// memory-tier files of at most idleMaxBytes, the least recently closed
// closed first (a kept lower-tier file costs a descriptor; a kept memory
// file that gets evicted would hold its RAM in the tier's tmpfs); a sweep
// every idleSweep closes those idle for idleKeep and those whose file is
// no longer current (evicted, promoted, removed), so an evicted memory
// file is not held for long. The node's forget and the unmount close
// theirs.

const (
	idleKeep     = time.Second
	idleSweep    = 100 * time.Millisecond
	idleMaxFiles = 256
	idleMaxBytes = 64 << 20
)

// openCache is the mount's list of kept descriptors.
//
// Lock order: a node's mu, then openCache.mu; the sweep takes the cache's
// mu alone and locks each node after releasing it.
type openCache struct {
	mu      sync.Mutex
	lru     list.List // of idleRef, most recently closed at the front
	bytes   int64     // the sizes of the kept memory-tier files
	seq     uint64    // numbers the keeps
	running bool      // a sweep is scheduled
	closed  bool      // unmounted: nothing is kept any more
}

// idleRef is one kept descriptor: the node, its keep's number (a node
// reused and kept again has a new one), the file it reads, its size if it
// is a memory-tier file (0 otherwise) and when it was kept.
type idleRef struct {
	n   *storedFile
	seq uint64
	tok store.Token
	mem int64
	at  time.Time
}

// keep records st (n's state, refs 0, under n.mu) as kept; it returns the
// kept descriptors over the bounds, which the caller closes (closeRefs)
// once it has released n.mu. It reports false when nothing may be kept
// (the mount is closing): the caller closes st's descriptor.
func (c *openCache) keep(n *storedFile, st *openState, s *fsState) (bool, []idleRef) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false, nil
	}
	c.seq++
	st.idle = c.seq
	r := idleRef{n: n, seq: c.seq, tok: st.tok, at: time.Now()}
	if st.level == store.MemoryTier {
		r.mem = st.size
	}
	st.elem = c.lru.PushFront(r)
	c.bytes += r.mem
	var over []idleRef
	for e := c.lru.Back(); e != nil && (c.lru.Len() > idleMaxFiles || c.bytes > idleMaxBytes); {
		prev := e.Prev()
		if c.lru.Len() > idleMaxFiles || e.Value.(idleRef).mem > 0 {
			over = append(over, c.removeLocked(e))
		}
		e = prev
	}
	if !c.running {
		c.running = true
		time.AfterFunc(idleSweep, func() { c.sweep(s) })
	}
	return true, over
}

// unkeep takes st (under its node's mu) off the list: it is in use again
// or being closed.
func (c *openCache) unkeep(st *openState) {
	if st.elem == nil {
		return
	}
	c.mu.Lock()
	if st.elem.Value != nil {
		c.removeLocked(st.elem)
	}
	c.mu.Unlock()
	st.elem, st.idle = nil, 0
}

// removeLocked takes e, which is on the list, off it and returns its
// record.
func (c *openCache) removeLocked(e *list.Element) idleRef {
	r := e.Value.(idleRef)
	c.lru.Remove(e)
	c.bytes -= r.mem
	e.Value = nil
	return r
}

// sweep closes the descriptors kept for idleKeep or no longer current,
// and runs again while any is kept.
func (c *openCache) sweep(s *fsState) {
	now := time.Now()
	var done []idleRef
	c.mu.Lock()
	for e := c.lru.Front(); e != nil; {
		next := e.Next()
		r := e.Value.(idleRef)
		if now.Sub(r.at) >= idleKeep || !s.store.Tiers().Current(r.n.key, r.tok) {
			done = append(done, c.removeLocked(e))
		}
		e = next
	}
	c.running = c.lru.Len() > 0 && !c.closed
	if c.running {
		time.AfterFunc(idleSweep, func() { c.sweep(s) })
	}
	c.mu.Unlock()
	c.closeRefs(s, done)
}

// closeRefs closes the kept descriptors of refs that are still kept by
// the same keep (not reused meanwhile).
func (c *openCache) closeRefs(s *fsState, refs []idleRef) {
	for _, r := range refs {
		n := r.n
		n.mu.Lock()
		if st := n.st; st != nil && st.refs == 0 && st.idle == r.seq && st.backing != nil {
			st.elem = nil
			s.closeBacking(st)
			n.trim()
		}
		n.mu.Unlock()
	}
}

// closeAll closes every kept descriptor and keeps none from now on (the
// mount is going away).
func (c *openCache) closeAll(s *fsState) {
	c.mu.Lock()
	c.closed = true
	var all []idleRef
	for c.lru.Len() > 0 {
		all = append(all, c.removeLocked(c.lru.Front()))
	}
	c.mu.Unlock()
	c.closeRefs(s, all)
}

// Passthrough backing ids the daemon registers itself (light.Backing
// registers them and hands them to the OPEN reply)
//
// go-fuse registers a node's backing file at its first open and
// unregisters it at its last release. A published file keeps its
// descriptor for a while after the last close (opencache.go), and its
// backing id with it, so the daemon registers the descriptor itself and
// hands the id to the kernel in the OPEN reply: light.Bridge wraps
// go-fuse's node bridge and, after the node's Open, writes the id its
// node left for the request (light.Backing.Give, keyed by the request's
// cancel channel, which is the request's own while it runs).

// closeBacking unregisters st's backing id and closes its descriptor
// (under its node's mu, refs 0).
func (s *fsState) closeBacking(st *openState) {
	s.backing.Unregister(st.backingID, s.log)
	st.backing.Close()
	st.backing, st.backingID, st.idle = nil, 0, 0
}
