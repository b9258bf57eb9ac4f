package light

import (
	"hash/maphash"
	"sync"
	"sync/atomic"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/internal/hashtab"
)

// The light-node table (layer.go explains light nodes): one 28-byte entry
// per published file the kernel holds without a go-fuse node, in pages
// indexed by node id - lightBase, with a free list, and a hash table
// (internal/hashtab, 8-byte slots) from the file's key to its index, so
// that a name listed or looked up again gets the same node id (the kernel
// then counts one more lookup of it). With the table's slots a light node
// costs 39 to 49 bytes; the pages never move, so the table leaves no
// garbage behind as it grows.

// lightBase is the first light node id. go-fuse numbers its nodes from 2
// upward, one per node made, so the two ranges never meet.
const lightBase = 1 << 62

// lightPage is the number of entries in a page of the table (112 KiB).
const lightPage = 4096

// IsLight reports whether a node id is a light node's.
func IsLight(id uint64) bool { return id >= lightBase && id < lightBase<<1 }

// Ref names a shard directory: what the adapter's shard node is built
// from (model, number or name, width), without its go-fuse node.
type Ref struct {
	Model string
	Shard byte   // the shard's number, for a shard of ids' first byte
	Dir   string // the directory's name
	Width int    // -1: a ucmb shard; 0..4: a raw shard of that width
}

// lightEntry is one light node: 28 bytes.
type lightEntry struct {
	id    format.ID
	shard uint32 // index in Table.shards
	refs  uint32 // the kernel's lookups; 0: the slot is free
	kind  format.Kind
}

// lightKey identifies a light node's file: its shard slot, id and kind.
type lightKey struct {
	shard uint32
	kind  format.Kind
	id    format.ID
}

// lightSeed seeds the hash of light keys: ids are names users choose.
var lightSeed = maphash.MakeSeed()

func (k lightKey) hash() uint64 { return maphash.Comparable(lightSeed, k) }

func (e *lightEntry) key() lightKey { return lightKey{shard: e.shard, kind: e.kind, id: e.id} }

// lightShard is a shard directory that has light nodes: its go-fuse node
// id, on which the table holds one lookup of its own while count > 0, so
// that the shard's node outlives every light node under it.
type lightShard struct {
	ref   Ref
	node  uint64
	count int
}

// Table holds the light nodes. It is safe for concurrent use.
type Table struct {
	mu      sync.Mutex
	pages   [][]lightEntry
	used    uint32 // entries handed out so far (free or not)
	free    []uint32
	byKey   hashtab.Table[uint32] // index + 1 of each entry in use
	reals   map[uint32]uint64     // index -> the go-fuse node id it was materialized as
	shards  []lightShard
	sfree   []uint32
	byShard map[uint64]uint32    // the shard's node id -> its slot
	byName  map[[2]string]uint32 // {model, dir} -> its slot
	gauge   *atomic.Int64        // the number of light nodes, for .ucm/stats
}

// NewTable returns an empty table that keeps gauge at its number of
// light nodes.
func NewTable(gauge *atomic.Int64) *Table {
	return &Table{reals: make(map[uint32]uint64), byShard: make(map[uint64]uint32),
		byName: make(map[[2]string]uint32), gauge: gauge}
}

// ent returns entry i; under t.mu.
func (t *Table) ent(i uint32) *lightEntry { return &t.pages[i/lightPage][i%lightPage] }

// live returns entry i if it is in use; under t.mu.
func (t *Table) live(i uint64) *lightEntry {
	if i >= uint64(t.used) {
		return nil
	}
	if e := t.ent(uint32(i)); e.refs > 0 {
		return e
	}
	return nil
}

// find returns the index of key's entry, k hashing to h; under t.mu.
func (t *Table) find(k lightKey, h uint64) (uint32, bool) {
	v, ok := t.byKey.Find(h, func(v uint32) bool { return t.ent(v-1).key() == k })
	return v - 1, ok
}

// Acquire counts one kernel lookup of key, in the shard directory whose
// go-fuse node id is shardNode, and returns its light node id. made
// reports a new light node; first, that the shard got its first one: the
// caller then takes the table's own lookup of the shard's node.
func (t *Table) Acquire(shardNode uint64, ref Ref, key format.Key) (id uint64, made, first bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	si, ok := t.byShard[shardNode]
	if !ok {
		if n := len(t.sfree); n > 0 {
			si, t.sfree = t.sfree[n-1], t.sfree[:n-1]
		} else {
			si = uint32(len(t.shards))
			t.shards = append(t.shards, lightShard{})
		}
		t.shards[si] = lightShard{ref: ref, node: shardNode}
		t.byShard[shardNode] = si
		t.byName[[2]string{ref.Model, ref.Dir}] = si
		first = true
	}
	k := lightKey{shard: si, kind: key.Kind, id: key.ID}
	h := k.hash() // once, for the lookup and the insert of a new node
	if i, ok := t.find(k, h); ok {
		t.ent(i).refs++
		return lightBase + uint64(i), false, false
	}
	var i uint32
	if n := len(t.free); n > 0 {
		i, t.free = t.free[n-1], t.free[:n-1]
	} else {
		if t.used == uint32(len(t.pages))*lightPage {
			t.pages = append(t.pages, make([]lightEntry, lightPage))
		}
		i = t.used
		t.used++
	}
	*t.ent(i) = lightEntry{id: key.ID, shard: si, kind: key.Kind, refs: 1}
	t.byKey.Insert(h, i+1)
	t.gauge.Add(1)
	t.shards[si].count++
	return lightBase + uint64(i), true, first
}

// Info is what a request on a light node needs of it.
type Info struct {
	Key   format.Key
	Ref   Ref
	Shard uint64 // the shard directory's go-fuse node id
	Real  uint64 // the materialized node id, 0 if none
}

// Get returns what light node id stands for; false for a free or unknown
// one.
func (t *Table) Get(id uint64) (Info, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.live(id - lightBase)
	if e == nil {
		return Info{}, false
	}
	sh := &t.shards[e.shard]
	return Info{Key: format.Key{Model: sh.ref.Model, ID: e.id, Kind: e.kind},
		Ref: sh.ref, Shard: sh.node, Real: t.reals[uint32(id-lightBase)]}, true
}

// SetReal records the go-fuse node id light node id was materialized as.
func (t *Table) SetReal(id, real uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.live(id-lightBase) != nil {
		t.reals[uint32(id-lightBase)] = real
	}
}

// Forget subtracts n kernel lookups of light node id. When none is left
// it frees the slot and returns the node id it was materialized as (0 if
// none) and, if it was the shard's last light node, the shard's node id:
// the caller forgets the table's lookups of both.
func (t *Table) Forget(id, n uint64) (real, shard uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.live(id - lightBase)
	if e == nil {
		return 0, 0
	}
	if uint64(e.refs) > n {
		e.refs -= uint32(n)
		return 0, 0
	}
	i := uint32(id - lightBase)
	real = t.reals[i]
	delete(t.reals, i)
	sh := &t.shards[e.shard]
	k := e.key()
	t.byKey.Delete(k.hash(), func(v uint32) bool { return v == i+1 })
	t.gauge.Add(-1)
	if sh.count--; sh.count == 0 {
		shard = sh.node
		delete(t.byShard, sh.node)
		delete(t.byName, [2]string{sh.ref.Model, sh.ref.Dir})
		*sh = lightShard{}
		t.sfree = append(t.sfree, e.shard)
	}
	*e = lightEntry{}
	t.free = append(t.free, i)
	return real, shard
}

// Holds reports whether the kernel holds key, in shard directory dir of
// its model, as a light node.
func (t *Table) Holds(dir string, key format.Key) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	si, ok := t.byName[[2]string{key.Model, dir}]
	if !ok {
		return false
	}
	k := lightKey{shard: si, kind: key.Kind, id: key.ID}
	_, ok = t.find(k, k.hash())
	return ok
}

// Count is the number of light nodes the kernel holds.
func (t *Table) Count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.byKey.Len()
}

// Registry maps the inode numbers of live shard nodes to their names,
// and the go-fuse node ids seen for them, so the layer can tell a shard
// directory by its node id. Shard nodes register when made and leave
// when forgotten. It is safe for concurrent use.
type Registry struct {
	mu     sync.RWMutex
	byIno  map[uint64]*shardReg
	byNode map[uint64]*shardReg
}

// shardReg is one registered shard node.
type shardReg struct {
	ref   Ref
	owner any      // the node that registered it (a lookup race may make two)
	nodes []uint64 // the go-fuse node ids resolved to it
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{byIno: make(map[uint64]*shardReg), byNode: make(map[uint64]*shardReg)}
}

// Made registers shard node owner, just made with number ino, as ref.
func (r *Registry) Made(ino uint64, owner any, ref Ref) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.byIno[ino] = &shardReg{owner: owner, ref: ref}
}

// Remove drops shard node owner of number ino, when it is still the one
// registered.
func (r *Registry) Remove(ino uint64, owner any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	reg := r.byIno[ino]
	if reg == nil || reg.owner != owner {
		return
	}
	delete(r.byIno, ino)
	for _, n := range reg.nodes {
		delete(r.byNode, n)
	}
}

// byID returns the shard registered for go-fuse node id, if resolved.
func (r *Registry) byID(node uint64) (Ref, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if reg := r.byNode[node]; reg != nil {
		return reg.ref, true
	}
	return Ref{}, false
}

// resolve records that go-fuse node id node has number ino, and returns
// the shard registered under it.
func (r *Registry) resolve(node, ino uint64) (Ref, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	reg := r.byIno[ino]
	if reg == nil {
		return Ref{}, false
	}
	if r.byNode[node] != reg {
		reg.nodes = append(reg.nodes, node)
		r.byNode[node] = reg
	}
	return reg.ref, true
}

// ModelNodes returns the node ids of the light nodes of model's files:
// the kernel holds their attributes, which a change of the model's owner
// or mode must drop.
func (t *Table) ModelNodes(model string) []uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []uint64
	for i := uint32(0); i < t.used; i++ {
		if e := t.ent(i); e.refs > 0 && t.shards[e.shard].ref.Model == model {
			out = append(out, lightBase+uint64(i))
		}
	}
	return out
}
