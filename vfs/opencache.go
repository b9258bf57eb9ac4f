package vfs

import (
	"sync"
	"time"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/store"
)

// Descriptors kept after the last close
//
// Every open of a published file used to open its tier file and, with
// passthrough, register it with the kernel (FUSE_DEV_IOC_BACKING_OPEN);
// the last close unregistered and closed it. UCM loads a block with four
// threads that each open, read and close it, so one load paid that two or
// three times. Now a node keeps its descriptor and backing id for
// IdleKeep after its last close: an open in that time hands the kernel
// the same id, without an openat or an ioctl, once the stack confirms
// (store.Store.ReuseOpen, no syscall) that the descriptor still reads the
// block's current file on the tier the read path would choose, and counts
// the open as a read there.
//
// What is kept is bounded: at most idleMaxFiles descriptors, of which
// memory-tier files of at most IdleMaxBytes, the least recently closed
// closed first (a kept lower-tier file costs a descriptor; a kept memory
// file that gets evicted would hold its RAM in the tier's tmpfs); a sweep
// every IdleSweep closes those idle for IdleKeep and those whose file is
// no longer current (evicted, promoted, removed), so an evicted memory
// file is not held for long. The node's forget and the unmount close
// theirs.

// The bounds of what is kept.
const (
	IdleKeep     = time.Second            // how long a descriptor is kept after its last close
	IdleSweep    = 100 * time.Millisecond // how often the kept ones are looked at
	idleMaxFiles = 256
	IdleMaxBytes = 64 << 20 // the memory-tier files kept, in bytes
)

// Kept is a node whose descriptor an OpenCache keeps.
type Kept interface {
	// CloseKept closes the node's kept descriptor if it is still kept by
	// the keep numbered seq (not reused meanwhile); it takes the node's
	// own lock.
	CloseKept(seq uint64)
}

// Keep is a node's place in the OpenCache while its descriptor is kept:
// the list's element itself, part of the node, so that keeping a
// descriptor at each last close allocates nothing.
type Keep struct {
	seq uint64 // the keep's number, 0 when not kept; under the node's lock

	// Under OpenCache.mu:
	ref        IdleRef
	prev, next *Keep // towards the front (more recently closed), the back
	listed     bool  // on the list
}

// Is reports whether the descriptor is kept by the keep numbered seq.
func (k *Keep) Is(seq uint64) bool { return k.seq != 0 && k.seq == seq }

// Forget clears the keep of a descriptor closed or in use again (off the
// list by then).
func (k *Keep) Forget() { k.seq = 0 }

// OpenCache is the mount's list of kept descriptors.
//
// Lock order: a node's lock, then OpenCache.mu; the sweep takes the
// cache's mu alone and locks each node (Kept.CloseKept) after releasing
// it.
type OpenCache struct {
	store   *store.Store
	mu      sync.Mutex
	front   *Keep  // the most recently closed
	back    *Keep  // the least recently closed
	n       int    // the keeps listed
	bytes   int64  // the sizes of the kept memory-tier files
	seq     uint64 // numbers the keeps
	running bool   // a sweep is scheduled
	closed  bool   // unmounted: nothing is kept any more
}

// NewOpenCache returns an empty list of the descriptors kept of st's
// files.
func NewOpenCache(st *store.Store) *OpenCache { return &OpenCache{store: st} }

// IdleRef is one kept descriptor: the node, the key it reads, its keep's
// number (a node reused and kept again has a new one), the file it reads,
// its size if it is a memory-tier file (0 otherwise) and when it was
// kept.
type IdleRef struct {
	n   Kept
	key format.Key
	seq uint64
	tok store.Token
	mem int64
	at  time.Time
}

// Keep records the descriptor of node n, which reads key's file tok of
// size bytes on tier level, as kept (n has no open handle; under n's
// lock), and sets mark to its keep; it returns the kept descriptors over
// the bounds, which the caller closes (CloseRefs) once it has released
// n's lock. It reports false when nothing may be kept (the mount is
// closing): the caller closes the descriptor.
func (c *OpenCache) Keep(n Kept, mark *Keep, key format.Key, tok store.Token, level int, size int64) (bool, []IdleRef) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false, nil
	}
	c.seq++
	mark.seq = c.seq
	mark.ref = IdleRef{n: n, key: key, seq: c.seq, tok: tok, at: time.Now()}
	if level == store.MemoryTier {
		mark.ref.mem = size
	}
	c.pushFront(mark)
	var over []IdleRef
	for e := c.back; e != nil && (c.n > idleMaxFiles || c.bytes > IdleMaxBytes); {
		prev := e.prev
		if c.n > idleMaxFiles || e.ref.mem > 0 {
			over = append(over, c.removeLocked(e))
		}
		e = prev
	}
	if !c.running {
		c.running = true
		time.AfterFunc(IdleSweep, c.sweep)
	}
	return true, over
}

// Unkeep takes the descriptor mark keeps (under its node's lock) off the
// list: it is in use again or being closed.
func (c *OpenCache) Unkeep(mark *Keep) {
	if mark.seq == 0 {
		return
	}
	c.mu.Lock()
	if mark.listed {
		c.removeLocked(mark)
	}
	c.mu.Unlock()
	mark.Forget()
}

// Len is the number of descriptors kept.
func (c *OpenCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// pushFront puts k, not listed, at the front of the list; under c.mu.
func (c *OpenCache) pushFront(k *Keep) {
	k.prev, k.next, k.listed = nil, c.front, true
	if c.front != nil {
		c.front.prev = k
	} else {
		c.back = k
	}
	c.front = k
	c.n++
	c.bytes += k.ref.mem
}

// removeLocked takes k, which is on the list, off it and returns its
// record.
func (c *OpenCache) removeLocked(k *Keep) IdleRef {
	if k.prev != nil {
		k.prev.next = k.next
	} else {
		c.front = k.next
	}
	if k.next != nil {
		k.next.prev = k.prev
	} else {
		c.back = k.prev
	}
	r := k.ref
	k.ref, k.prev, k.next, k.listed = IdleRef{}, nil, nil, false
	c.n--
	c.bytes -= r.mem
	return r
}

// sweep closes the descriptors kept for IdleKeep or no longer current,
// and runs again while any is kept.
func (c *OpenCache) sweep() {
	now := time.Now()
	var done []IdleRef
	c.mu.Lock()
	for e := c.front; e != nil; {
		next := e.next
		if now.Sub(e.ref.at) >= IdleKeep || !c.store.Tiers().Current(e.ref.key, e.ref.tok) {
			done = append(done, c.removeLocked(e))
		}
		e = next
	}
	c.running = c.n > 0 && !c.closed
	if c.running {
		time.AfterFunc(IdleSweep, c.sweep)
	}
	c.mu.Unlock()
	c.CloseRefs(done)
}

// CloseRefs closes the kept descriptors of refs that are still kept by
// the same keep (not reused meanwhile).
func (c *OpenCache) CloseRefs(refs []IdleRef) {
	for _, r := range refs {
		r.n.CloseKept(r.seq)
	}
}

// CloseAll closes every kept descriptor and keeps none from now on (the
// mount is going away).
func (c *OpenCache) CloseAll() {
	c.mu.Lock()
	c.closed = true
	var all []IdleRef
	for c.front != nil {
		all = append(all, c.removeLocked(c.front))
	}
	c.mu.Unlock()
	c.CloseRefs(all)
}
