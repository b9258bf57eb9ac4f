package vfs

import (
	"fmt"
	"log/slog"
	"os"
	"sync"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/store"
)

// Opened is what the node of a published file keeps while the file is
// open (or its header was read): its open state, behind one pointer, so
// that a node the kernel holds but nobody opened stays small (the kernel
// keeps one node per block it has looked up, and a `du` of a model looks
// up every block).
//
// The kernel keeps one backing file per inode for passthrough, so every
// open of the node shares one descriptor: the first open gets it from the
// stack (whichever tier holds the file) and registers it with the kernel,
// the last release keeps it for a while (opencache.go) or closes it.
type Opened struct {
	mu sync.Mutex
	st *openState // under mu; nil until the first open or header read
}

// openState is what an Opened keeps while it is open or used.
type openState struct {
	backing   *os.File     // nil when neither open nor kept
	backingID int32        // backing's passthrough id (0: none registered here)
	tok       store.Token  // the tier file backing reads (Stack.Reuse)
	level     int          // the tier backing was opened from (Handle.TierID)
	size      int64        // backing's size
	refs      int          // open handles
	kept      Keep         // while kept after the last close: its place in the OpenCache
	header    []byte       // the first 64 bytes, once read
	writing   *store.Draft // a write opened on this node (the file was absent)
}

// Backer registers descriptors with the kernel as passthrough backing
// files (light.Backing).
type Backer interface {
	Register(f *os.File, log *slog.Logger) int32
	Unregister(id int32, log *slog.Logger)
}

// Descriptors is what the shared descriptors of a mount's published files
// go through: the store that opens them, the cache that keeps them after
// the last close, and the registration of their backing ids.
type Descriptors struct {
	Store   *store.Store
	Cache   *OpenCache
	Backing Backer
	Log     *slog.Logger
}

// state returns the open state, making it; under o.mu.
func (o *Opened) state() *openState {
	if o.st == nil {
		o.st = &openState{}
	}
	return o.st
}

// trim drops the open state when nothing in it is in use; under o.mu.
func (o *Opened) trim() {
	if st := o.st; st != nil && st.refs == 0 && st.backing == nil && st.header == nil && st.writing == nil {
		o.st = nil
	}
}

// closeBacking unregisters st's backing id and closes its descriptor
// (under its node's mu, refs 0).
func (d *Descriptors) closeBacking(st *openState) {
	d.Backing.Unregister(st.backingID, d.Log)
	st.backing.Close()
	st.backing, st.backingID = nil, 0
	st.kept.Forget()
}

// Forget closes the kept descriptor of a node the kernel forgot.
func (o *Opened) Forget(d *Descriptors) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if st := o.st; st != nil && st.refs == 0 && st.backing != nil {
		d.Cache.Unkeep(&st.kept)
		d.closeBacking(st)
		o.trim()
	}
}

// CloseKept closes the descriptor kept by keep seq, if it is still kept
// (the node's Kept.CloseKept).
func (o *Opened) CloseKept(d *Descriptors, seq uint64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if st := o.st; st != nil && st.refs == 0 && st.kept.Is(seq) && st.backing != nil {
		d.closeBacking(st)
		o.trim()
	}
}

// Acquire returns the shared descriptor, with the tier it reads from, its
// size and its backing id: the open one, else the one kept after the last
// close while the stack says it still reads the block's file, else a new
// one from the stack. key is the one the node serves.
func (o *Opened) Acquire(d *Descriptors, key format.Key) (f *os.File, level int, size int64, id int32, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if st := o.st; st != nil && st.backing != nil {
		if st.refs == 0 { // kept
			d.Cache.Unkeep(&st.kept)
			if !d.Store.Tiers().Reuse(key, st.tok) {
				d.closeBacking(st)
			}
		}
		if st.backing != nil {
			st.refs++
			return st.backing, st.level, st.size, st.backingID, nil
		}
	}
	h, err := d.Store.Tiers().Open(key)
	if err != nil {
		return nil, 0, 0, 0, err
	}
	st := o.state()
	st.backing, st.refs, st.tok = h.File, 1, h.Token
	st.level, st.size = int(h.TierID), h.Size
	st.backingID = d.Backing.Register(h.File, d.Log)
	return h.File, st.level, st.size, st.backingID, nil
}

// Release drops one handle's use of the shared descriptor of node n, of
// key; the last one keeps it for a while (opencache.go), or closes it
// when it cannot be reused.
func (o *Opened) Release(d *Descriptors, n Kept, key format.Key) {
	o.mu.Lock()
	st := o.st
	if st.refs--; st.refs > 0 {
		o.mu.Unlock()
		return
	}
	kept, over := false, []IdleRef(nil)
	if st.tok.Valid() {
		kept, over = d.Cache.Keep(n, &st.kept, key, st.tok, st.level, st.size)
	}
	if !kept {
		d.closeBacking(st)
		o.trim()
	}
	o.mu.Unlock()
	d.Cache.CloseRefs(over)
}

// ReadHeader returns the file's 64-byte header, read once per node: the
// file is immutable, so the copy stays right. Without a descriptor open
// it opens the file the node serves (served), key naming it in errors.
func (o *Opened) ReadHeader(d *Descriptors, key format.Key, served func() format.Key) ([]byte, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.st != nil && o.st.header != nil {
		return o.st.header, nil
	}
	var f *os.File
	if o.st != nil {
		f = o.st.backing
	}
	if f == nil {
		h, err := d.Store.Tiers().Open(served())
		if err != nil {
			return nil, err
		}
		defer h.File.Close()
		f = h.File
	}
	b := make([]byte, format.HeaderSize)
	if _, err := f.ReadAt(b, 0); err != nil {
		return nil, fmt.Errorf("%s: reading the header: %w", key, err)
	}
	o.state().header = b
	return b, nil
}

// SetWriter records w, a write opened on the node (its file was absent).
func (o *Opened) SetWriter(w *store.Draft) {
	o.mu.Lock()
	o.state().writing = w
	o.mu.Unlock()
}

// Writer returns the write opened on the node while it is not done.
func (o *Opened) Writer() *store.Draft {
	var ip *store.Draft
	o.mu.Lock()
	if o.st != nil {
		ip = o.st.writing
	}
	o.mu.Unlock()
	if ip == nil || !ip.Writable() {
		if ip != nil {
			o.mu.Lock()
			if o.st != nil && o.st.writing == ip {
				o.st.writing = nil
				o.trim()
			}
			o.mu.Unlock()
		}
		return nil
	}
	return ip
}

// Readers is the number of open read handles.
func (o *Opened) Readers() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.st == nil {
		return 0
	}
	return o.st.refs
}

// OpenDescriptor is the shared descriptor while a handle has it open,
// else nil.
func (o *Opened) OpenDescriptor() *os.File {
	o.mu.Lock()
	defer o.mu.Unlock()
	if st := o.st; st != nil && st.refs > 0 {
		return st.backing
	}
	return nil
}
