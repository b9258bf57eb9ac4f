package fs

import (
	"context"
	"errors"
	"sync"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/ucmfs/ucmfs/hashdir"
	"github.com/ucmfs/ucmfs/store"
)

// Light nodes
//
// A `du -s` or `ls -l` of a model makes the kernel list every shard with
// READDIRPLUS, and go-fuse answers each name with a lookup that makes an
// Inode (some 600 bytes and 10 µs each), kept as long as the kernel keeps
// the name. lightFS, a thin layer between the kernel and go-fuse's bridge
// (the fuse.RawFileSystem NewNodeFS returns), answers READDIRPLUS and
// LOOKUP of a published file in a shard directory itself: the entry is
// filled from the index (the attributes and timeouts a lookup through
// go-fuse gives, publishedAttr) with a light node id, 1<<62 + a slot of
// the light table (light_table.go, 40 bytes and a map slot per name), and
// no go-fuse node is made. A name listed or looked up again gets the same
// id; FORGET frees the slot when the kernel's count reaches 0.
//
// GETATTR of a light node is answered from the index too. Any other
// request on one materializes it first, once: a LOOKUP of its name on the
// shard's go-fuse node, through the bridge, makes the node the kernel
// would have had (the table keeps the one lookup it took, and forgets it
// with the light node), and the request goes to that node. A file gone
// since it was listed still gets its node (materializing), so a read is
// ENOENT and a write open starts a new write, as with a cached node.
// Everything else (staging files, misses, sidecars that are derivable
// but not stored, every other directory) goes through the bridge as
// before. Removal, rename and publish work by name on the shard's node.
//
// The layer knows a shard directory by its node id: shard nodes register
// their number when made (shardRegistry); the first request on a
// directory's node id asks the bridge for its attributes, and a number
// registered as a shard's ties that node id to it. While a shard has light
// nodes the table holds a lookup of the shard's go-fuse node ("." on it),
// so the node outlives them.

// lightCancel is the cancel channel of the lookups that materialize a
// light node: shardNode.Lookup tells them by it (materializing).
var lightCancel = make(chan struct{})

// materializing reports whether ctx is a lookup that materializes a light
// node.
func materializing(ctx context.Context) bool {
	c, ok := ctx.(*fuse.Context)
	return ok && c.Cancel == lightCancel
}

// matLocks is the number of locks that serialize materializations.
const matLocks = 64

// lightFS is the layer that answers for light nodes and passes every
// other request to go-fuse's bridge (light_dir.go, light_ops.go).
type lightFS struct {
	b fuse.RawFileSystem
	s *fsState

	dirsMu sync.Mutex
	dirs   map[uint64]*lightDir // open shard directories, by handle

	mat [matLocks]sync.Mutex // by light id: one materialization at a time
}

// lightDir is an open shard directory: its listing, taken at offset 0.
type lightDir struct {
	mu   sync.Mutex
	ref  shardRef
	node uint64       // the shard's go-fuse node id
	snap []shardEntry // offsets are positions in it
}

var _ fuse.RawFileSystem = (*lightFS)(nil)

func newLightFS(b fuse.RawFileSystem, s *fsState) *lightFS {
	return &lightFS{b: b, s: s, dirs: make(map[uint64]*lightDir)}
}

// statusOf is the status of errno (0: OK).
func statusOf(errno syscall.Errno) fuse.Status { return fuse.Status(errno) }

// shardOf returns the shard directory whose go-fuse node id is id, if it
// is one.
func (w *lightFS) shardOf(cancel <-chan struct{}, id uint64, caller fuse.Caller) (shardRef, bool) {
	if ref, ok := w.s.shards.byID(id); ok {
		return ref, true
	}
	in := fuse.GetAttrIn{InHeader: fuse.InHeader{NodeId: id, Caller: caller}}
	var out fuse.AttrOut
	if st := w.b.GetAttr(cancel, &in, &out); !st.Ok() || tagOf(out.Ino) != tagShard {
		return shardRef{}, false
	}
	return w.s.shards.resolve(id, out.Ino)
}

// Lookup answers a lookup of a published file in a shard directory with a
// light node, and a miss there from the index; the rest goes to the
// bridge.
func (w *lightFS) Lookup(cancel <-chan struct{}, h *fuse.InHeader, name string, out *fuse.EntryOut) fuse.Status {
	if isLight(h.NodeId) {
		return statusOf(errnoNotDir)
	}
	ref, ok := w.shardOf(cancel, h.NodeId, h.Caller)
	if !ok || name == "." || name == ".." || w.s.store.WriteNamed(ref.model, ref.dir, name) {
		return w.b.Lookup(cancel, h, name, out)
	}
	d := ref.node(w.s)
	key, err := d.key(name)
	if err != nil {
		return w.b.Lookup(cancel, h, name, out)
	}
	epoch := w.s.store.WriteEpoch(key)
	bi, err := w.s.store.StatFile(key)
	switch {
	case err == nil:
		w.entry(h.NodeId, ref, key, bi, w.s.inos.peek(fileInoName(key)), out)
		return fuse.OK
	case errors.Is(err, store.ErrNotFound) && key.Kind != hashdir.Repr:
		// As the bridge answers a miss: cached for the negative TTL
		// unless missEntry set a timeout.
		errno := w.s.missEntry(key, epoch, out)
		if errno == errnoMissing && out.EntryTimeout() == 0 {
			out.SetEntryTimeout(w.s.opts.NegativeTTL)
			return fuse.OK
		}
		return statusOf(errno)
	}
	return w.b.Lookup(cancel, h, name, out)
}

// entry fills out with the light node of published file key (bi from the
// index, ino its number) in the shard whose go-fuse node id is shard.
func (w *lightFS) entry(shard uint64, ref shardRef, key hashdir.Key, bi store.BlockInfo, ino uint64, out *fuse.EntryOut) {
	id, made, first := w.s.light.acquire(shard, ref, key)
	if first {
		// The table's own lookup of the shard's node (see above).
		var eo fuse.EntryOut
		w.b.Lookup(nil, &fuse.InHeader{NodeId: shard}, ".", &eo)
	}
	if made {
		w.s.kernel.addLight(id)
	}
	w.s.publishedAttr(key, bi, out)
	out.NodeId, out.Generation = id, 0
	out.Attr.Ino = ino
	w.s.bridgeAttr(&out.Attr)
}

// attr fills out with the attributes of published file key from the
// index, as GETATTR of its go-fuse node would.
func (w *lightFS) attr(key hashdir.Key, bi store.BlockInfo, out *fuse.AttrOut) {
	w.s.blockAttr(&out.Attr, bi.Size, bi.MTime, key.Model)
	out.SetTimeout(w.s.opts.EntryTTL)
	out.Ino = w.s.inos.peek(fileInoName(key))
	w.s.bridgeAttr(&out.Attr)
}

// bridgeAttr applies what go-fuse's bridge adds to the attributes it
// passes on: a mode with no permission bits shows 0644, owner 0 shows the
// mount's.
func (s *fsState) bridgeAttr(a *fuse.Attr) {
	if a.Mode&0o7777 == 0 {
		a.Mode |= 0o644
	}
	if s.uid != 0 && a.Uid == 0 {
		a.Uid = s.uid
	}
	if s.gid != 0 && a.Gid == 0 {
		a.Gid = s.gid
	}
}

// Forget subtracts the kernel's lookups of a node; a light node whose
// count reaches 0 is freed, with the lookups the table held for it.
func (w *lightFS) Forget(id, n uint64) {
	if !isLight(id) {
		w.b.Forget(id, n)
		return
	}
	real, shard := w.s.light.forget(id, n)
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
func (w *lightFS) real(id uint64, caller fuse.Caller) (uint64, fuse.Status) {
	if !isLight(id) {
		return id, fuse.OK
	}
	li, ok := w.s.light.get(id)
	if ok && li.real != 0 {
		return li.real, fuse.OK
	}
	mu := &w.mat[id%matLocks]
	mu.Lock()
	defer mu.Unlock()
	if li, ok = w.s.light.get(id); !ok {
		return 0, statusOf(errnoMissing)
	}
	if li.real != 0 {
		return li.real, fuse.OK
	}
	var out fuse.EntryOut
	hdr := fuse.InHeader{NodeId: li.shard, Caller: caller}
	if st := w.b.Lookup(lightCancel, &hdr, li.key.FileName(), &out); !st.Ok() {
		return 0, st
	}
	if out.NodeId == 0 {
		return 0, statusOf(errnoMissing)
	}
	w.s.light.setReal(id, out.NodeId)
	return out.NodeId, fuse.OK
}

// GetAttr of a light node not materialized is answered from the index;
// every other goes to its go-fuse node.
func (w *lightFS) GetAttr(cancel <-chan struct{}, in *fuse.GetAttrIn, out *fuse.AttrOut) fuse.Status {
	if isLight(in.NodeId) {
		if li, ok := w.s.light.get(in.NodeId); ok && li.real == 0 {
			if bi, err := w.s.store.StatFile(li.key); err == nil {
				w.attr(li.key, bi, out)
				return fuse.OK
			}
		}
	}
	var st fuse.Status
	if in.NodeId, st = w.real(in.NodeId, in.Caller); !st.Ok() {
		return st
	}
	return w.b.GetAttr(cancel, in, out)
}
