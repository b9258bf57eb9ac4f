package vfs

import (
	"fmt"
	"time"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/fs/ino"
	"github.com/ucmfs/ucmfs/layout/registry"
	"github.com/ucmfs/ucmfs/store"
)

// Which version of a published file a node serves, and what a setattr
// may change of it (the adapter's storedFile, fs/file.go).

// Serves is the key node n, looked up as key, serves: its own, or for a
// published File renamed since it was looked up, the File's new key (the
// kernel moved its entry, and the node with it, to the new name, and may
// use it there until it looks the name up again).
func (f *FilesNodes[N]) Serves(moves *DirMoves, key format.Key, n uint64) format.Key {
	k := f.Follow(key, n)
	if registry.Of(k).Tree() && moves.Wait(k.Model, k.Name) {
		k = f.Follow(key, n) // moved meanwhile
	}
	return k
}

// Superseded reports whether node n is a version of the File key (the
// one it serves) that a newer one replaced: its number is not the current
// version's, or, for a node whose File was moved to key, key's
// generation moved on since.
func (f *FilesNodes[N]) Superseded(st *store.Store, inos *ino.Table, key format.Key, n uint64) bool {
	if !registry.Of(key).Replaces() {
		return false
	}
	if gen, ok := f.MovedGen(n); ok {
		// Moved (perhaps back to its first name, whose generation the
		// move away moved on): the generation it had where it went.
		return st.Writes().Gen(key) != gen
	}
	return n != inos.Peek(ino.FileVersion(key, st.Writes().Gen(key)))
}

// VersionAttr is the size and mtime of what the open descriptors read, a
// File of key k, when the store's file under the name is no longer that
// one (replaced by a new version, or removed; superseded says whether the
// node is a replaced version): a descriptor opened before goes on reading
// its version, and fstat must describe it (SGLang's fast_file drops a
// page whose fstat size is not what it reads). ok is false when nothing
// is open or it reads the current file.
func (o *Opened) VersionAttr(st *store.Store, k format.Key, superseded func() bool) (size int64, mtime time.Time, ok bool) {
	if !registry.Of(k).Replaces() {
		return 0, time.Time{}, false
	}
	f := o.OpenDescriptor()
	if f == nil || !superseded() && st.Tiers().Has(k) {
		return 0, time.Time{}, false // not open, or the current version (a moved node's, where it was moved)
	}
	fi, err := f.Stat() // a descriptor the node holds while it is open
	if err != nil {
		return 0, time.Time{}, false
	}
	return fi.Size(), fi.ModTime(), true
}

// CheckPublishedSetattr refuses a change of a published file's size,
// special mode bits or owner, which belongs to uid and gid (a chmod of
// permission bits, which is kept as it was, and a chown to what it
// already is pass).
func CheckPublishedSetattr(sa SetAttr, uid, gid uint32) error {
	if sa.Size != nil {
		return fmt.Errorf("truncate: published files are immutable: %w", store.ErrImmutable)
	}
	if sa.Mode != nil && *sa.Mode&0o7000 != 0 {
		return fmt.Errorf("chmod %o: published files take no setuid, setgid or sticky bit: %w", *sa.Mode&0o7777, store.ErrImmutable)
	}
	if sa.UID != nil && *sa.UID != uid {
		return fmt.Errorf("chown: published files belong to uid %d: %w", uid, store.ErrImmutable)
	}
	if sa.GID != nil && *sa.GID != gid {
		return fmt.Errorf("chgrp: published files belong to gid %d: %w", gid, store.ErrImmutable)
	}
	return nil
}

// SupersededOffTree adds to old the numbers of the File nodes off
// go-fuse's tree (Replaced) that serve a replaced version of a file
// beneath dir of model, as the adapter does for those in the tree (fs's
// supersededBeneath); keyOf is the key a node was looked up as. A move
// takes the files' current versions along, and these stay what they are.
func (f *FilesNodes[N]) SupersededOffTree(st *store.Store, inos *ino.Table, model, dir string, old map[uint64]bool, keyOf func(N) format.Key) {
	f.eachOffTree(func(n uint64, b N) bool {
		if k := f.Follow(keyOf(b), n); k.Model == model && Beneath(k.Name, dir) && f.Superseded(st, inos, k, n) {
			old[n] = true
		}
		return true
	})
}

// FollowMove points the File nodes off go-fuse's tree (Replaced) that
// serve a file the move m takes along, unless in old, at the file's new
// path. The adapter does so for the nodes in the tree beneath the moved
// directory's node (fs's followMovedDir); the kernel may still hold one
// of these under its name (a lookup's answer that replaced it in the
// tree, racing a move or a revalidation, was not taken), and a reader
// right after the move found the file missing (TestFilesDirMoveReaders,
// about 1 run in 100).
func (f *FilesNodes[N]) FollowMove(st *store.Store, m DirMove, old map[uint64]bool, keyOf func(N) format.Key) {
	f.eachOffTree(func(n uint64, b N) bool {
		dst, ok := m.Moves(f.Follow(keyOf(b), n))
		if old[n] || !ok {
			return true
		}
		f.Moved(n, dst, st.Writes().Gen(dst))
		return true
	})
}
