package light

import (
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// The directory requests of Layer (layer.go): a shard directory's
// listing is answered from a snapshot per open handle; a request that
// takes a light node as a directory is ENOTDIR.

// OpenDir opens a directory through the bridge and remembers the handles
// of shard directories, whose READDIRPLUS this layer answers. Every open
// directory counts as an open file of its opener (Host.HoldOpen) until
// its release.
func (w *Layer) OpenDir(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	if IsLight(in.NodeId) {
		return notDirStatus
	}
	if st := w.host.HoldOpen(in.Caller.Uid); !st.Ok() {
		return st
	}
	st := w.b.OpenDir(cancel, in, out)
	if !st.Ok() {
		w.host.FreeOpen(in.Caller.Uid)
		return st
	}
	w.dirsMu.Lock()
	w.openers[out.Fh] = in.Caller.Uid
	w.dirsMu.Unlock()
	if ref, ok := w.shardOf(cancel, in.NodeId, in.Caller); ok {
		d := &lightDir{ref: ref, node: in.NodeId}
		if w.host.CacheListing(ref, in.NodeId) {
			d.cached = true
			out.OpenFlags |= fuse.FOPEN_CACHE_DIR | fuse.FOPEN_KEEP_CACHE
		}
		w.dirsMu.Lock()
		w.dirs[out.Fh] = d
		w.dirsMu.Unlock()
	}
	return st
}

// snapshot is h's listing from offset off: taken anew at offset 0 (under
// h.mu), charged to the caller (Host.HoldListing) until the next take or
// the release.
func (w *Layer) snapshot(h *lightDir, off uint64, caller uint32) ([]Entry, fuse.Status) {
	if off == 0 || h.snap == nil {
		w.host.FreeListing(h.uid, len(h.snap))
		h.snap = nil
		uid := caller
		if h.cached {
			uid = NoUser
			w.host.ListingTaken(h.ref, h.node)
		}
		snap := w.host.Listing(h.ref, uid)
		if st := w.host.HoldListing(caller, len(snap)); !st.Ok() {
			return nil, st
		}
		h.snap, h.uid = snap, caller
	}
	return h.snap, fuse.OK
}

// dir returns the open shard directory of handle fh, or nil.
func (w *Layer) dir(fh uint64) *lightDir {
	w.dirsMu.Lock()
	defer w.dirsMu.Unlock()
	return w.dirs[fh]
}

// ReleaseDir forgets an open shard directory and closes the handle,
// after the flock locks of the open directory go.
func (w *Layer) ReleaseDir(in *fuse.ReleaseIn) {
	if in.ReleaseFlags&fuse.FUSE_RELEASE_FLOCK_UNLOCK != 0 {
		w.host.FlockRelease(in.LockOwner)
	}
	if IsLight(in.NodeId) {
		return
	}
	w.dirsMu.Lock()
	h := w.dirs[in.Fh]
	delete(w.dirs, in.Fh)
	uid, opened := w.openers[in.Fh]
	delete(w.openers, in.Fh)
	w.dirsMu.Unlock()
	if opened {
		w.host.FreeOpen(uid)
	}
	if h != nil {
		h.mu.Lock()
		w.host.FreeListing(h.uid, len(h.snap))
		h.snap = nil
		h.mu.Unlock()
	}
	w.b.ReleaseDir(in)
}

// ReadDirPlus lists a shard directory from its listing, the published
// files as light nodes, the rest looked up through the bridge.
func (w *Layer) ReadDirPlus(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	if IsLight(in.NodeId) {
		return notDirStatus
	}
	h := w.dir(in.Fh)
	if h == nil {
		return w.b.ReadDirPlus(cancel, in, out)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	snap, st := w.snapshot(h, in.Offset, in.Caller.Uid)
	if !st.Ok() {
		return st
	}
	for i := in.Offset; i < uint64(len(snap)); i++ {
		e := &snap[i]
		eo := out.AddDirLookupEntry(fuse.DirEntry{Name: e.Name, Mode: e.mode(), Ino: e.Ino, Off: i + 1})
		if eo == nil {
			break
		}
		if e.Dir {
			continue // the kernel ignores the entry of "." and ".."
		}
		if e.Published && w.host.Entry(e.Key, eo) {
			eo.Attr.Ino = e.Ino // the listing's number
			w.entry(h.node, h.ref, e.Key, eo)
			continue
		}
		// A staging file, or a file gone since the listing: as before.
		hdr := fuse.InHeader{NodeId: h.node, Caller: in.Caller}
		if st := w.b.Lookup(cancel, &hdr, e.Name, eo); !st.Ok() {
			*eo = fuse.EntryOut{}
		}
	}
	return fuse.OK
}

// notDir reports a request that takes a light node as a directory.
func notDir(ids ...uint64) bool {
	for _, id := range ids {
		if IsLight(id) {
			return true
		}
	}
	return false
}

// Mknod takes a directory: ENOTDIR on a light node.
func (w *Layer) Mknod(cancel <-chan struct{}, in *fuse.MknodIn, name string, out *fuse.EntryOut) fuse.Status {
	if notDir(in.NodeId) {
		return notDirStatus
	}
	return w.b.Mknod(cancel, in, name, out)
}

// Mkdir takes a directory: ENOTDIR on a light node.
func (w *Layer) Mkdir(cancel <-chan struct{}, in *fuse.MkdirIn, name string, out *fuse.EntryOut) fuse.Status {
	if notDir(in.NodeId) {
		return notDirStatus
	}
	return w.b.Mkdir(cancel, in, name, out)
}

// Unlink takes a directory: ENOTDIR on a light node.
func (w *Layer) Unlink(cancel <-chan struct{}, in *fuse.InHeader, name string) fuse.Status {
	if notDir(in.NodeId) {
		return notDirStatus
	}
	return w.b.Unlink(cancel, in, name)
}

// Rmdir takes a directory: ENOTDIR on a light node.
func (w *Layer) Rmdir(cancel <-chan struct{}, in *fuse.InHeader, name string) fuse.Status {
	if notDir(in.NodeId) {
		return notDirStatus
	}
	return w.b.Rmdir(cancel, in, name)
}

// Rename takes a directory: ENOTDIR on a light node.
func (w *Layer) Rename(cancel <-chan struct{}, in *fuse.RenameIn, oldName string, newName string) fuse.Status {
	if notDir(in.NodeId, in.Newdir) {
		return notDirStatus
	}
	return w.b.Rename(cancel, in, oldName, newName)
}

// Symlink takes a directory: ENOTDIR on a light node.
func (w *Layer) Symlink(cancel <-chan struct{}, in *fuse.InHeader, pointedTo string, linkName string, out *fuse.EntryOut) fuse.Status {
	if notDir(in.NodeId) {
		return notDirStatus
	}
	return w.b.Symlink(cancel, in, pointedTo, linkName, out)
}

// Create takes a directory: ENOTDIR on a light node.
func (w *Layer) Create(cancel <-chan struct{}, in *fuse.CreateIn, name string, out *fuse.CreateOut) fuse.Status {
	if notDir(in.NodeId) {
		return notDirStatus
	}
	return w.b.Create(cancel, in, name, out)
}

// Tmpfile takes a directory: ENOTDIR on a light node.
func (w *Layer) Tmpfile(cancel <-chan struct{}, in *fuse.CreateIn, out *fuse.CreateOut) fuse.Status {
	if notDir(in.NodeId) {
		return notDirStatus
	}
	return w.b.Tmpfile(cancel, in, out)
}

// ReadDir takes a directory: ENOTDIR on a light node. A shard directory
// opened with a cached listing is listed from the snapshot ReadDirPlus
// lists (the kernel may fill its cache with either).
func (w *Layer) ReadDir(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	if notDir(in.NodeId) {
		return notDirStatus
	}
	h := w.dir(in.Fh)
	if h == nil || !h.cached {
		return w.b.ReadDir(cancel, in, out)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	snap, st := w.snapshot(h, in.Offset, in.Caller.Uid)
	if !st.Ok() {
		return st
	}
	for i := in.Offset; i < uint64(len(snap)); i++ {
		if !out.AddDirEntry(fuse.DirEntry{Name: snap[i].Name, Mode: snap[i].mode(), Ino: snap[i].Ino, Off: i + 1}) {
			break
		}
	}
	return fuse.OK
}

// FsyncDir takes a directory: ENOTDIR on a light node.
func (w *Layer) FsyncDir(cancel <-chan struct{}, in *fuse.FsyncIn) fuse.Status {
	if notDir(in.NodeId) {
		return notDirStatus
	}
	return w.b.FsyncDir(cancel, in)
}

// mode is the file type a listing gives e.
func (e *Entry) mode() uint32 {
	if e.Dir {
		return syscall.S_IFDIR
	}
	return syscall.S_IFREG
}
