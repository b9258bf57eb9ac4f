package fs

// Inode numbers
//
// Every node gets its number from this table; go-fuse's automatic numbers
// (2^63 and up) are never used. The top four bits are a kind tag, so two
// nodes of different kinds never share a number:
//
//	number                      node
//	1                           root
//	2 .. 255                    control: 2 .ucm, 3 .ucm/stats, 4 .ucm/lookup,
//	                            5 .ucm/prefetch, 6 .ucm/flush, 7 .ucm/gpu,
//	                            8 .ucm/topk,
//	                            9 .. 255 reserved for more control files
//	tag 1: 1<<60 | h60(model)   model directory
//	tag 2: 2<<60 | h52(model)<<8 | shard
//	                            shard directory 00..ff of a model
//	tag 3: 3<<60 | h60(model, id)
//	                            published block <id>.bin
//	tag 4: 4<<60 | h60(model, id)
//	                            sidecar <id>.repr: the block's hash with
//	                            another tag, so it never shares the block's
//	                            number
//	tag 5: 5<<60 | n            a file being written: n counts creates in
//	                            this run, so no two writers (of one id or
//	                            not) ever share a node or a backing file
//	tags 6 .. 15                reserved
//
// h60 and h52 are the low 60 and 52 bits of FNV-1a 64 over the kind tag and
// the names, so a name gets the same number in every run. go-fuse merges
// nodes with equal numbers, so a collision would make two names one file:
// the table remembers, for each number held by a live node, a 64-bit
// fingerprint of the name holding it (a second, independent hash), and a
// name whose number is held by another name probes upward (within its
// tag) to the next free one; only such moved names are kept whole. A
// collision needs ~2^30 live names of one kind; only then may a number
// depend on the order of lookups. Two names would also need equal
// fingerprints to be taken for one (~2^-64 per colliding pair).
//
// Per looked-up block this costs one 16-byte map slot, not a copy of the
// name in two maps: `du` of a model makes the kernel look every block up.

import (
	"hash/fnv"
	"hash/maphash"
	"sync"

	"github.com/ucmfs/ucmfs/control"
	"github.com/ucmfs/ucmfs/hashdir"
)

// The fixed numbers: the root, .ucm/ and the control files, whose
// numbers are control's table's (control.Files).
const (
	inoRoot = control.RootIno
	inoUCM  = control.DirIno
	// inoControlMax is the last number reserved for control files.
	inoControlMax = control.LastIno
)

// inoTag is the kind tag in the top four bits of a hashed number.
type inoTag uint64

// The kind tags.
const (
	tagModel   inoTag = 1
	tagShard   inoTag = 2
	tagBlock   inoTag = 3
	tagRepr    inoTag = 4
	tagPending inoTag = 5
	tagScratch inoTag = 6 // private entries of a ucm-posix model (model_dot.go)
)

const (
	tagShift = 60
	lowMask  = 1<<tagShift - 1
)

// tagOf returns the kind tag of a hashed number.
func tagOf(ino uint64) inoTag { return inoTag(ino >> tagShift) }

// inoName is the identity a number stands for: the tag and the names.
type inoName struct {
	tag   inoTag
	model string
	shard byte
	dir   string // a raw shard's name (shardInoName)
	id    hashdir.ID
}

// shardInoName is the identity of a shard directory of model: a ucmb
// shard by its number, a raw shard (width >= 0) by its name, so the two
// never share a node when a model's layout changes.
func shardInoName(model string, shard byte, dir string, width int) inoName {
	if width >= 0 {
		return inoName{tag: tagShard, model: model, dir: dir}
	}
	return inoName{tag: tagShard, model: model, shard: shard}
}

// home is the number a name gets when nobody else holds it.
func (n inoName) home() uint64 {
	h := fnv.New64a()
	h.Write([]byte{byte(n.tag)})
	h.Write([]byte(n.model))
	var low uint64
	switch n.tag {
	case tagShard:
		if n.dir != "" {
			h.Write([]byte{0})
			h.Write([]byte(n.dir))
		}
		low = (h.Sum64()&(1<<52-1))<<8 | uint64(n.shard)
	case tagBlock, tagRepr:
		h.Write([]byte{0})
		h.Write(n.id[:])
		low = h.Sum64() & lowMask
	default:
		low = h.Sum64() & lowMask
	}
	return uint64(n.tag)<<tagShift | low
}

// next is the number probed after ino: the next one in the same tag,
// wrapping around, never a reserved low number.
func next(ino uint64) uint64 {
	tag := ino &^ lowMask
	low := (ino + 1) & lowMask
	if tag == 0 && low <= inoControlMax {
		low = inoControlMax + 1
	}
	return tag | low
}

// inoTable hands out numbers for names and keeps them unique among the
// names whose nodes live. It is safe for concurrent use.
type inoTable struct {
	mu    sync.Mutex
	seed  maphash.Seed
	taken map[uint64]uint64  // number held -> fingerprint of its holder
	moved map[inoName]uint64 // holders of a number other than their home
}

func newInoTable() *inoTable {
	return &inoTable{seed: maphash.MakeSeed(), taken: make(map[uint64]uint64), moved: make(map[inoName]uint64)}
}

// fingerprint is a 64-bit hash of name independent of its number.
func (t *inoTable) fingerprint(name inoName) uint64 { return maphash.Comparable(t.seed, name) }

// acquire returns name's number: the one it holds, else its home number,
// else the next free one after it.
func (t *inoTable) acquire(name inoName) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.moved) > 0 {
		if ino, ok := t.moved[name]; ok {
			return ino
		}
	}
	fp := t.fingerprint(name)
	home := name.home()
	ino := home
	for {
		holder, taken := t.taken[ino]
		if !taken {
			break
		}
		if holder == fp {
			return ino // name holds it already
		}
		ino = next(ino)
	}
	t.taken[ino] = fp
	if ino != home {
		t.moved[name] = ino
	}
	return ino
}

// release frees name's number when its node is forgotten by the kernel.
// A node that lost a lookup race to an equal one releases nothing: the
// number is only freed when it is still name's.
func (t *inoTable) release(name inoName, ino uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if holder, ok := t.taken[ino]; !ok || holder != t.fingerprint(name) {
		return
	}
	delete(t.taken, ino)
	if len(t.moved) > 0 && t.moved[name] == ino {
		delete(t.moved, name)
	}
}

// held is the number of names holding numbers (for tests).
func (t *inoTable) held() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.taken)
}

// peek returns the number name holds, or its home number, without taking
// one (for directory listings).
func (t *inoTable) peek(name inoName) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if ino, ok := t.moved[name]; ok {
		return ino
	}
	return name.home()
}
