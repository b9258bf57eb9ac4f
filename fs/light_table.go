package fs

import (
	"sync"

	"github.com/ucmfs/ucmfs/hashdir"
	"github.com/ucmfs/ucmfs/tiers"
)

// The light-node table (light.go explains light nodes): one 40-byte entry
// per published file the kernel holds without a go-fuse node, in a slice
// indexed by node id - lightBase, with a free list, and a map from the
// file's key to its index so that a name listed or looked up again gets
// the same node id (the kernel then counts one more lookup of it).

// lightBase is the first light node id. go-fuse numbers its nodes from 2
// upward, one per node made, so the two ranges never meet.
const lightBase = 1 << 62

// isLight reports whether a node id is a light node's.
func isLight(id uint64) bool { return id >= lightBase && id < lightBase<<1 }

// shardRef names a shard directory: what a shardNode is built from
// (model, number or name, width), without its go-fuse node.
type shardRef struct {
	model string
	shard byte
	dir   string
	width int
}

// node returns a shardNode value for ref's names and rules (key, keys,
// staging); it has no go-fuse node.
func (r shardRef) node(s *fsState) shardNode {
	return shardNode{dirCommon: dirCommon{common: common{s: s}, what: r.model + "/" + r.dir},
		model: r.model, shard: r.shard, dir: r.dir, width: r.width}
}

// lightEntry is one light node: 40 bytes.
type lightEntry struct {
	id    hashdir.ID
	shard uint32 // index in lightTable.shards
	kind  hashdir.Kind
	refs  uint32 // the kernel's lookups; 0: the slot is free
	real  uint64 // the go-fuse node id it was materialized as; 0: none
}

// lightKey identifies a light node's file: its shard slot, id and kind.
type lightKey struct {
	shard uint32
	kind  hashdir.Kind
	id    hashdir.ID
}

// lightShard is a shard directory that has light nodes: its go-fuse node
// id, on which the table holds one lookup of its own while count > 0, so
// that the shard's node outlives every light node under it.
type lightShard struct {
	ref   shardRef
	node  uint64
	count int
}

// lightTable holds the light nodes. It is safe for concurrent use.
type lightTable struct {
	mu      sync.Mutex
	ents    []lightEntry
	free    []uint32
	byKey   map[lightKey]uint32
	shards  []lightShard
	sfree   []uint32
	byShard map[uint64]uint32    // the shard's node id -> its slot
	byName  map[[2]string]uint32 // {model, dir} -> its slot
}

func newLightTable() *lightTable {
	return &lightTable{byKey: make(map[lightKey]uint32), byShard: make(map[uint64]uint32),
		byName: make(map[[2]string]uint32)}
}

// acquire counts one kernel lookup of key, in the shard directory whose
// go-fuse node id is shardNode, and returns its light node id. made
// reports a new light node; first, that the shard got its first one: the
// caller then takes the table's own lookup of the shard's node.
func (t *lightTable) acquire(shardNode uint64, ref shardRef, key tiers.Key) (id uint64, made, first bool) {
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
		t.byName[[2]string{ref.model, ref.dir}] = si
		first = true
	}
	k := lightKey{shard: si, kind: key.Kind, id: key.ID}
	if i, ok := t.byKey[k]; ok {
		t.ents[i].refs++
		return lightBase + uint64(i), false, false
	}
	var i uint32
	if n := len(t.free); n > 0 {
		i, t.free = t.free[n-1], t.free[:n-1]
	} else {
		i = uint32(len(t.ents))
		t.ents = append(t.ents, lightEntry{})
	}
	t.ents[i] = lightEntry{id: key.ID, shard: si, kind: key.Kind, refs: 1}
	t.byKey[k] = i
	t.shards[si].count++
	return lightBase + uint64(i), true, first
}

// lightInfo is what a request on a light node needs of it.
type lightInfo struct {
	key   tiers.Key
	ref   shardRef
	shard uint64 // the shard directory's go-fuse node id
	real  uint64 // the materialized node id, 0 if none
}

// get returns what light node id stands for; false for a free or unknown
// one.
func (t *lightTable) get(id uint64) (lightInfo, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	i := id - lightBase
	if i >= uint64(len(t.ents)) || t.ents[i].refs == 0 {
		return lightInfo{}, false
	}
	e := &t.ents[i]
	sh := &t.shards[e.shard]
	return lightInfo{key: tiers.Key{Model: sh.ref.model, ID: e.id, Kind: e.kind},
		ref: sh.ref, shard: sh.node, real: e.real}, true
}

// setReal records the go-fuse node id light node id was materialized as.
func (t *lightTable) setReal(id, real uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if i := id - lightBase; i < uint64(len(t.ents)) && t.ents[i].refs > 0 {
		t.ents[i].real = real
	}
}

// forget subtracts n kernel lookups of light node id. When none is left
// it frees the slot and returns the node id it was materialized as (0 if
// none) and, if it was the shard's last light node, the shard's node id:
// the caller forgets the table's lookups of both.
func (t *lightTable) forget(id, n uint64) (real, shard uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	i := id - lightBase
	if i >= uint64(len(t.ents)) || t.ents[i].refs == 0 {
		return 0, 0
	}
	e := &t.ents[i]
	if uint64(e.refs) > n {
		e.refs -= uint32(n)
		return 0, 0
	}
	real = e.real
	sh := &t.shards[e.shard]
	delete(t.byKey, lightKey{shard: e.shard, kind: e.kind, id: e.id})
	if sh.count--; sh.count == 0 {
		shard = sh.node
		delete(t.byShard, sh.node)
		delete(t.byName, [2]string{sh.ref.model, sh.ref.dir})
		*sh = lightShard{}
		t.sfree = append(t.sfree, e.shard)
	}
	*e = lightEntry{}
	t.free = append(t.free, uint32(i))
	return real, shard
}

// holds reports whether the kernel holds key, in shard directory dir of
// its model, as a light node.
func (t *lightTable) holds(dir string, key tiers.Key) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	si, ok := t.byName[[2]string{key.Model, dir}]
	if !ok {
		return false
	}
	_, ok = t.byKey[lightKey{shard: si, kind: key.Kind, id: key.ID}]
	return ok
}

// count is the number of light nodes the kernel holds.
func (t *lightTable) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.byKey)
}

// shardRegistry maps the inode numbers of live shard nodes to their names,
// and the go-fuse node ids seen for them, so the wrapper can tell a shard
// directory by its node id. Shard nodes register when made and leave
// in OnForget.
type shardRegistry struct {
	mu     sync.RWMutex
	byIno  map[uint64]*shardReg
	byNode map[uint64]*shardReg
}

// shardReg is one registered shard node.
type shardReg struct {
	ref   shardRef
	owner *shardNode // the node that registered it (a lookup race may make two)
	nodes []uint64   // the go-fuse node ids resolved to it
}

func newShardRegistry() *shardRegistry {
	return &shardRegistry{byIno: make(map[uint64]*shardReg), byNode: make(map[uint64]*shardReg)}
}

// made registers shard node d, just made, under its number and returns
// it.
func (r *shardRegistry) made(d *shardNode) *shardNode {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.byIno[d.ino] = &shardReg{owner: d, ref: shardRef{model: d.model, shard: d.shard, dir: d.dir, width: d.width}}
	return d
}

// remove drops shard node d, when it is still the one registered.
func (r *shardRegistry) remove(d *shardNode) {
	r.mu.Lock()
	defer r.mu.Unlock()
	reg := r.byIno[d.ino]
	if reg == nil || reg.owner != d {
		return
	}
	delete(r.byIno, d.ino)
	for _, n := range reg.nodes {
		delete(r.byNode, n)
	}
}

// byID returns the shard registered for go-fuse node id, if resolved.
func (r *shardRegistry) byID(node uint64) (shardRef, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if reg := r.byNode[node]; reg != nil {
		return reg.ref, true
	}
	return shardRef{}, false
}

// resolve records that go-fuse node id node has number ino, and returns
// the shard registered under it.
func (r *shardRegistry) resolve(node, ino uint64) (shardRef, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	reg := r.byIno[ino]
	if reg == nil {
		return shardRef{}, false
	}
	if r.byNode[node] != reg {
		reg.nodes = append(reg.nodes, node)
		r.byNode[node] = reg
	}
	return reg.ref, true
}
