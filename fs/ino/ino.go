// Package ino gives the adapter's nodes their inode numbers: the same
// number for the same name in every run, a kind tag in the top bits, and
// no two live names sharing one (Table).
package ino

// Inode numbers
//
// Every node gets its number from this table; go-fuse's automatic numbers
// (2^63 and up) are never used. The top four bits are a kind tag, so two
// nodes of different kinds never share a number:
//
//	number                      node
//	1                           root
//	2 .. 255                    2 .ucm, then the control files in the
//	                            numbers of control's table (3 .ucm/stats,
//	                            4 .ucm/lookup, ...); the rest reserved for
//	                            more control files
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
//	tag 6: scratch entries      private entries of a ucm-posix model
//	tag 7: 7<<60 | h60(model, path)
//	                            a directory of a files model
//	tags 8 .. 15                reserved
//
// A File of a files model is numbered as a block (tag 3), from its id and
// its generation: a File published again under its name (replaced) is a
// new node, so a reader of the old one never shares its kernel backing.
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

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/layout/registry"
)

// Reserved is the last of the fixed numbers, which no name gets: the
// root, .ucm/ and the control files, numbered by the control package's
// table (control.LastIno, which a test of package fs holds equal).
const Reserved = 255

// Tag is the kind tag in the top four bits of a hashed number.
type Tag uint64

// The kind tags.
const (
	Model   Tag = 1
	Shard   Tag = 2
	Block   Tag = 3
	Repr    Tag = 4
	Pending Tag = 5
	Scratch Tag = 6 // private entries of a ucm-posix model (fs/scratch/dir.go)
	TreeDir Tag = 7 // a directory of a files model (package fs/filesdir)
)

const (
	Shift   = 60
	LowMask = 1<<Shift - 1
)

// TagOf returns the kind tag of a hashed number.
func TagOf(ino uint64) Tag { return Tag(ino >> Shift) }

// Name is the identity a number stands for: the tag and the names.
type Name struct {
	Tag   Tag
	Model string
	Shard byte
	Dir   string // a raw shard's name (ShardName), a files model's directory (DirName)
	ID    format.ID
	Gen   uint64 // a File's generation (FileVersion)
}

// ShardName is the identity of a shard directory of model: a ucmb
// shard by its number, a raw shard (width >= 0) by its name, so the two
// never share a node when a model's layout changes.
func ShardName(model string, shard byte, dir string, width int) Name {
	if width >= 0 {
		return Name{Tag: Shard, Model: model, Dir: dir}
	}
	return Name{Tag: Shard, Model: model, Shard: shard}
}

// home is the number a name gets when nobody else holds it.
func (n Name) home() uint64 {
	h := fnv.New64a()
	h.Write([]byte{byte(n.Tag)})
	h.Write([]byte(n.Model))
	var low uint64
	switch n.Tag {
	case Shard:
		if n.Dir != "" {
			h.Write([]byte{0})
			h.Write([]byte(n.Dir))
		}
		low = (h.Sum64()&(1<<52-1))<<8 | uint64(n.Shard)
	case Block, Repr:
		h.Write([]byte{0})
		h.Write(n.ID[:])
		if n.Gen != 0 {
			h.Write([]byte{byte(n.Gen), byte(n.Gen >> 8), byte(n.Gen >> 16), byte(n.Gen >> 24),
				byte(n.Gen >> 32), byte(n.Gen >> 40), byte(n.Gen >> 48), byte(n.Gen >> 56)})
		}
		low = h.Sum64() & LowMask
	case TreeDir:
		h.Write([]byte{0})
		h.Write([]byte(n.Dir))
		low = h.Sum64() & LowMask
	default:
		low = h.Sum64() & LowMask
	}
	return uint64(n.Tag)<<Shift | low
}

// next is the number probed after ino: the next one in the same tag,
// wrapping around, never a reserved low number.
func next(ino uint64) uint64 {
	tag := ino &^ LowMask
	low := (ino + 1) & LowMask
	if tag == 0 && low <= Reserved {
		low = Reserved + 1
	}
	return tag | low
}

// Table hands out numbers for names and keeps them unique among the
// names whose nodes live. It is safe for concurrent use.
type Table struct {
	mu    sync.Mutex
	seed  maphash.Seed
	taken map[uint64]uint64 // number held -> fingerprint of its holder
	moved map[Name]uint64   // holders of a number other than their home
}

func NewTable() *Table {
	return &Table{seed: maphash.MakeSeed(), taken: make(map[uint64]uint64), moved: make(map[Name]uint64)}
}

// fingerprint is a 64-bit hash of name independent of its number.
func (t *Table) fingerprint(name Name) uint64 { return maphash.Comparable(t.seed, name) }

// Acquire returns name's number: the one it holds, else its home number,
// else the next free one after it.
func (t *Table) Acquire(name Name) uint64 {
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

// Release frees name's number when its node is forgotten by the kernel.
// A node that lost a lookup race to an equal one releases nothing: the
// number is only freed when it is still name's.
func (t *Table) Release(name Name, ino uint64) {
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

// Rename gives the number ino, which from holds, to to: a directory's
// node moved by a rename keeps its number under its new name, so that a
// new directory made under the old name gets one of its own (two live
// directories with one number look like a loop to find, du and rsync).
// Whatever number to held before stays held until its node is released,
// but to's lookups get ino from now on.
func (t *Table) Rename(from, to Name, ino uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if holder, ok := t.taken[ino]; !ok || holder != t.fingerprint(from) {
		return
	}
	t.taken[ino] = t.fingerprint(to)
	if t.moved[from] == ino {
		delete(t.moved, from)
	}
	if ino != to.home() {
		t.moved[to] = ino
	} else {
		delete(t.moved, to)
	}
}

// Holds reports whether name holds a number: a node of it lives.
func (t *Table) Holds(name Name) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.moved[name]; ok {
		return true
	}
	holder, ok := t.taken[name.home()]
	return ok && holder == t.fingerprint(name)
}

// Held is the number of names holding numbers (for tests).
func (t *Table) Held() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.taken)
}

// Peek returns the number name holds, or its home number, without taking
// one (for directory listings).
func (t *Table) Peek(name Name) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if ino, ok := t.moved[name]; ok {
		return ino
	}
	return name.home()
}

// FileName is the identity of published file key: a block, or a sidecar
// under another tag, so the two never share a number.
func FileName(key format.Key) Name {
	tag := Block
	if registry.Of(key).IsSidecar(key) {
		tag = Repr
	}
	return Name{Tag: tag, Model: key.Model, ID: key.ID}
}

// ModelName is the identity of model's directory.
func ModelName(model string) Name { return Name{Tag: Model, Model: model} }

// FileVersion is the identity of generation gen of the File key (0 for
// the first this run): FileName's for gen 0, another for each later one.
func FileVersion(key format.Key, gen uint64) Name {
	n := FileName(key)
	n.Gen = gen
	return n
}

// DirName is the identity of the directory dir of the files model model.
func DirName(model, dir string) Name { return Name{Tag: TreeDir, Model: model, Dir: dir} }
