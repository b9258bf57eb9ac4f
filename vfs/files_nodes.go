package vfs

import (
	"sync"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/fs/ino"
	"github.com/ucmfs/ucmfs/layout/registry"
)

// FilesNodes is what the adapter keeps about Files' nodes beyond their
// keys: the number names of nodes of a replaced File (whose generation is
// in their number) and the Files moved under a node (a published File
// renamed: the kernel keeps the old node under the new name until it
// looks it up again). Both are few and go with their nodes. And the
// nodes of published Files whose name in go-fuse's tree a lookup gave
// another node (off the tree): the kernel may keep such a node under the
// name (a lookup whose answer it did not take, racing a move or a
// revalidation), and a directory move, which walks the tree, points
// these at their new paths too (FollowMove). Few as well, and
// dropped when the kernel forgets them.
//
// N is the adapter's node of a published File.
type FilesNodes[N any] struct {
	names   sync.Map // node number -> ino.Name
	moves   sync.Map // node number -> movedFile
	offTree sync.Map // node number -> N

	mu      sync.Mutex
	targets map[format.Key]int // how many moved nodes serve each key
}

// movedFile is where a node's File was moved: its key there, and the
// generation it had there (a newer one replaced it).
type movedFile struct {
	to  format.Key
	gen uint64
}

// Replaced records b, the node numbered n of a published File, whose
// name in go-fuse's tree another node takes.
func (f *FilesNodes[N]) Replaced(n uint64, b N) { f.offTree.Store(n, b) }

// eachOffTree calls fn with every node Replaced recorded, and its
// number, until it returns false.
func (f *FilesNodes[N]) eachOffTree(fn func(n uint64, b N) bool) {
	f.offTree.Range(func(k, v any) bool { return fn(k.(uint64), v.(N)) })
}

// Named records the number name of node number n.
func (f *FilesNodes[N]) Named(n uint64, name ino.Name) { f.names.Store(n, name) }

// Moved records that the File of node number n now lives as to, of
// generation gen there.
func (f *FilesNodes[N]) Moved(n uint64, to format.Key, gen uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if prev, ok := f.moves.Swap(n, movedFile{to: to, gen: gen}); ok {
		f.untarget(prev.(movedFile).to)
	}
	if f.targets == nil {
		f.targets = make(map[format.Key]int)
	}
	f.targets[to]++
}

// untarget counts one moved node fewer serving key (under mu).
func (f *FilesNodes[N]) untarget(key format.Key) {
	if f.targets[key]--; f.targets[key] <= 0 {
		delete(f.targets, key)
	}
}

// MovedTo reports whether a node whose File was moved serves key: the
// kernel keeps it under key's name until it looks the name up again, and
// a lookup meanwhile gives the name a node of its own, so the two are
// one file (an unlink ends its version: either may be open).
func (f *FilesNodes[N]) MovedTo(key format.Key) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.targets[key] > 0
}

// MovedGen is the generation the File of node number n had where it was
// moved; ok is false when it was not moved.
func (f *FilesNodes[N]) MovedGen(n uint64) (gen uint64, ok bool) {
	m, ok := f.moves.Load(n)
	if !ok {
		return 0, false
	}
	return m.(movedFile).gen, true
}

// Follow is the key node number n of k serves: k, or where it was moved.
func (f *FilesNodes[N]) Follow(k format.Key, n uint64) format.Key {
	if !registry.Of(k).Tree() {
		return k
	}
	if m, ok := f.moves.Load(n); ok {
		return m.(movedFile).to
	}
	return k
}

// Forget drops what is kept for node number n of key, and returns the
// number name to release.
func (f *FilesNodes[N]) Forget(key format.Key, n uint64) ino.Name {
	if !registry.Of(key).Tree() {
		return ino.FileName(key)
	}
	f.offTree.Delete(n)
	f.mu.Lock()
	if prev, ok := f.moves.LoadAndDelete(n); ok {
		f.untarget(prev.(movedFile).to)
	}
	f.mu.Unlock()
	if name, ok := f.names.LoadAndDelete(n); ok {
		return name.(ino.Name)
	}
	return ino.FileName(key)
}
