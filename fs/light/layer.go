// Package light is the adapter's raw-protocol layer between the kernel
// and go-fuse's node bridge: light nodes, the backing ids of passthrough
// opens, and the bound on the nodes the kernel holds. It answers the
// requests it can from the index, through the adapter (Host), and passes
// every other request to the bridge; the go-fuse node types stay in
// package fs.
//
// A `du -s` or `ls -l` of a model makes the kernel list every shard with
// READDIRPLUS, and go-fuse answers each name with a lookup that makes an
// Inode (some 600 bytes and 10 µs each), kept as long as the kernel keeps
// the name. Layer, a thin layer between the kernel and go-fuse's bridge
// (the fuse.RawFileSystem NewNodeFS returns), answers READDIRPLUS and
// LOOKUP of a published file in a shard directory itself: the entry is
// filled from the index (the attributes and timeouts a lookup through
// go-fuse gives, publishedAttr) with a light node id, 1<<62 + a slot of
// the light table (table.go, 40 bytes and a map slot per name), and
// no go-fuse node is made. A name listed or looked up again gets the same
// id; FORGET frees the slot when the kernel's count reaches 0.
//
// GETATTR of a light node is answered from the index too. Any other
// request on one materializes it first, once: a LOOKUP of its name on the
// shard's go-fuse node, through the bridge, makes the node the kernel
// would have had (the table keeps the one lookup it took, and forgets it
// with the light node), and the request goes to that node. A file gone
// since it was listed still gets its node (Materializing), so a read is
// ENOENT and a write open starts a new write, as with a cached node.
// Everything else (staging files, misses, sidecars that are derivable
// but not stored, every other directory) goes through the bridge as
// before. Removal, rename and publish work by name on the shard's node.
//
// The layer knows a shard directory by its node id: shard nodes register
// their number when made (Registry); the first request on a
// directory's node id asks the bridge for its attributes, and a number
// registered as a shard's ties that node id to it. While a shard has light
// nodes the table holds a lookup of the shard's go-fuse node ("." on it),
// so the node outlives them.
package light

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/ucmfs/ucmfs/format"
)

// Host is what the layer asks of the adapter: the names and attributes of
// shard directories' files, answered from the index as go-fuse's nodes
// would answer them.
type Host interface {
	// ShardIno reports whether ino is a shard directory's number.
	ShardIno(ino uint64) bool
	// Lookup answers a lookup of name in shard ref without a node: Hit
	// (out holds the published file's entry, but its node id), Answered
	// (a miss; out and the status are the answer), or Pass (the bridge
	// answers: a staging file, a name that is no block's, a sidecar to
	// derive).
	Lookup(ref Ref, name string, out *fuse.EntryOut) (format.Key, Outcome, fuse.Status)
	// Listing returns shard ref's names as uid lists them, in order;
	// uid NoUser: the published files alone.
	Listing(ref Ref, uid uint32) []Entry
	// CacheListing reports whether the kernel may cache shard ref's
	// listing (FOPEN_CACHE_DIR) for a directory opened now: no file is
	// being written in it, and the host invalidates the cache (the node's
	// content) at the next change of what the shard holds.
	CacheListing(ref Ref, node uint64) bool
	// ListingTaken is called as the listing of shard ref, whose directory
	// node was opened with a cached listing, is taken (at offset 0, for
	// the kernel to fill its cache from): the host invalidates that cache
	// at the next change, as CacheListing's, even if it has invalidated
	// an earlier one since the open (the kernel refills it through the
	// same open directory).
	ListingTaken(ref Ref, node uint64)
	// Entry fills out with published file key's entry (but its node
	// id); false when no tier holds it any more.
	Entry(key format.Key, out *fuse.EntryOut) bool
	// Attr fills out with published file key's attributes; false when no
	// tier holds it any more.
	Attr(key format.Key, out *fuse.AttrOut) bool
	// HoldListing charges uid the n names of a listing an open shard
	// directory takes, or refuses them (the status to answer the read
	// with); FreeListing gives them back at the next take or the release.
	HoldListing(uid uint32, n int) fuse.Status
	FreeListing(uid uint32, n int)
	// HoldOpen charges uid an open directory, or refuses it (the status
	// to answer the OPENDIR with); FreeOpen gives it back at the release.
	HoldOpen(uid uint32) fuse.Status
	FreeOpen(uid uint32)
	// Handed is called with each light node given to the kernel anew.
	Handed(id uint64)
	// Flock takes or drops owner's flock lock (typ F_RDLCK, F_WRLCK,
	// F_UNLCK) on node, a node whose open file keeps no lock of its own
	// (the bridge answered ENOTSUP), for caller; wait waits for it until
	// cancel.
	Flock(cancel <-chan struct{}, caller fuse.Caller, node, owner uint64, typ uint32, wait bool) fuse.Status
	// FlockRelease drops every flock lock of owner: the last close of its
	// open file.
	FlockRelease(owner uint64)
}

// Outcome is how Host.Lookup answered.
type Outcome uint8

const (
	// Pass: the bridge answers the lookup.
	Pass Outcome = iota
	// Hit: a published file, answered with a light node.
	Hit
	// Answered: a miss, answered from the index.
	Answered
)

// Entry is one name of a shard directory's listing.
type Entry struct {
	Name      string
	Ino       uint64
	Key       format.Key
	Published bool // a published file (else a file being written)
	Dir       bool // "." or "..": listed as a directory, never looked up
}

// lightCancel is the cancel channel of the lookups that materialize a
// light node: shardNode.Lookup tells them by it (Materializing).
var lightCancel = make(chan struct{})

// Materializing reports whether ctx is a lookup that materializes a light
// node (the adapter does not count it as the kernel's).
func Materializing(ctx context.Context) bool {
	c, ok := ctx.(*fuse.Context)
	return ok && c.Cancel == lightCancel
}

// matLocks is the number of locks that serialize materializations.
const matLocks = 64

// Layer answers for light nodes and passes every other request to
// go-fuse's bridge (dir.go, ops.go).
type Layer struct {
	b      fuse.RawFileSystem
	host   Host
	table  *Table
	shards *Registry

	dirsMu  sync.Mutex
	dirs    map[uint64]*lightDir // open shard directories, by handle
	openers map[uint64]uint32    // every open directory's opener, by handle (Host.HoldOpen)

	mat [matLocks]sync.Mutex // by light id: one materialization at a time

	// notShard remembers node ids found not to be shard directories
	// (direct-mapped by the id's low bits): a lookup in a files model's
	// directory, the model's root or .ucm then costs no GETATTR through
	// the bridge after the first. go-fuse never reuses a node id and a
	// node's number, which says whether it is a shard, never changes, so
	// an entry is never stale; a collision only evicts.
	notShard [notShardSlots]atomic.Uint64
}

// notShardSlots is the size of Layer.notShard.
const notShardSlots = 1024

// NoUser is the uid of a listing of the published files alone: what a
// cached listing holds, since the kernel serves it to every caller.
const NoUser = ^uint32(0)

// lightDir is an open shard directory: its listing, taken at offset 0.
type lightDir struct {
	mu     sync.Mutex
	ref    Ref
	node   uint64  // the shard's go-fuse node id
	cached bool    // opened with FOPEN_CACHE_DIR: the listing is everyone's
	snap   []Entry // offsets are positions in it
	uid    uint32  // who snap is charged to (Host.HoldListing)
}

var _ fuse.RawFileSystem = (*Layer)(nil)

// NewLayer returns the layer over bridge b, keeping its light nodes in
// table and knowing shard directories by shards.
func NewLayer(b fuse.RawFileSystem, host Host, table *Table, shards *Registry) *Layer {
	return &Layer{b: b, host: host, table: table, shards: shards, dirs: make(map[uint64]*lightDir), openers: make(map[uint64]uint32)}
}

// notDirStatus answers a request that takes a light node (a file) as a
// directory.
const notDirStatus = fuse.ENOTDIR

// missing answers a request on a light node freed meanwhile.
const missing = fuse.ENOENT

// shardOf returns the shard directory whose go-fuse node id is id, if it
// is one.
func (w *Layer) shardOf(cancel <-chan struct{}, id uint64, caller fuse.Caller) (Ref, bool) {
	if ref, ok := w.shards.byID(id); ok {
		return ref, true
	}
	slot := &w.notShard[id%notShardSlots]
	if slot.Load() == id {
		return Ref{}, false
	}
	in := fuse.GetAttrIn{InHeader: fuse.InHeader{NodeId: id, Caller: caller}}
	var out fuse.AttrOut
	if st := w.b.GetAttr(cancel, &in, &out); !st.Ok() {
		return Ref{}, false
	}
	if !w.host.ShardIno(out.Ino) {
		slot.Store(id)
		return Ref{}, false
	}
	return w.shards.resolve(id, out.Ino)
}

// Lookup answers a lookup of a published file in a shard directory with a
// light node, and a miss there from the index; the rest goes to the
// bridge.
func (w *Layer) Lookup(cancel <-chan struct{}, h *fuse.InHeader, name string, out *fuse.EntryOut) fuse.Status {
	if IsLight(h.NodeId) {
		return notDirStatus
	}
	ref, ok := w.shardOf(cancel, h.NodeId, h.Caller)
	if !ok || name == "." || name == ".." {
		return w.b.Lookup(cancel, h, name, out)
	}
	key, outcome, st := w.host.Lookup(ref, name, out)
	switch outcome {
	case Hit:
		w.entry(h.NodeId, ref, key, out)
		return fuse.OK
	case Answered:
		return st
	}
	return w.b.Lookup(cancel, h, name, out)
}

// entry makes out, filled with published file key's entry, the light
// node of key in the shard whose go-fuse node id is shard.
func (w *Layer) entry(shard uint64, ref Ref, key format.Key, out *fuse.EntryOut) {
	id, made, first := w.table.Acquire(shard, ref, key)
	if first {
		// The table's own lookup of the shard's node (see above).
		var eo fuse.EntryOut
		w.b.Lookup(nil, &fuse.InHeader{NodeId: shard}, ".", &eo)
	}
	if made {
		w.host.Handed(id)
	}
	out.NodeId, out.Generation = id, 0
}

// Forget subtracts the kernel's lookups of a node; a light node whose
// count reaches 0 is freed, with the lookups the table held for it.
func (w *Layer) Forget(id, n uint64) {
	if !IsLight(id) {
		w.b.Forget(id, n)
		return
	}
	real, shard := w.table.Forget(id, n)
	if real != 0 {
		w.b.Forget(real, 1)
	}
	if shard != 0 {
		w.b.Forget(shard, 1)
	}
}

// real returns the go-fuse node id a request on node id goes to: id
// itself, or the node a light node is materialized as (made now if need
// be).
func (w *Layer) real(id uint64, caller fuse.Caller) (uint64, fuse.Status) {
	if !IsLight(id) {
		return id, fuse.OK
	}
	li, ok := w.table.Get(id)
	if ok && li.Real != 0 {
		return li.Real, fuse.OK
	}
	mu := &w.mat[id%matLocks]
	mu.Lock()
	defer mu.Unlock()
	if li, ok = w.table.Get(id); !ok {
		return 0, missing
	}
	if li.Real != 0 {
		return li.Real, fuse.OK
	}
	var out fuse.EntryOut
	hdr := fuse.InHeader{NodeId: li.Shard, Caller: caller}
	if st := w.b.Lookup(lightCancel, &hdr, li.Key.FileName(), &out); !st.Ok() {
		return 0, st
	}
	if out.NodeId == 0 {
		return 0, missing
	}
	w.table.SetReal(id, out.NodeId)
	return out.NodeId, fuse.OK
}

// GetAttr of a light node not materialized is answered from the index;
// every other goes to its go-fuse node.
func (w *Layer) GetAttr(cancel <-chan struct{}, in *fuse.GetAttrIn, out *fuse.AttrOut) fuse.Status {
	if IsLight(in.NodeId) {
		if li, ok := w.table.Get(in.NodeId); ok && li.Real == 0 && w.host.Attr(li.Key, out) {
			return fuse.OK
		}
	}
	var st fuse.Status
	if in.NodeId, st = w.real(in.NodeId, in.Caller); !st.Ok() {
		return st
	}
	return w.b.GetAttr(cancel, in, out)
}
