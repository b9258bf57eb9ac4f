package filesdir

import (
	"context"
	"sync"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/fs/ino"
	"github.com/ucmfs/ucmfs/vfs"
)

// The listings of a files model's directories (docs/design.md, "Cached
// listings"). A directory opened while no file is being written in it is
// opened with FOPEN_CACHE_DIR, as a ucmb shard is (fs/dir_cache.go): the
// kernel keeps the listing and answers the next getdents of any process
// from it, with no READDIRPLUS and no lookup of each name. Such a listing
// holds the subdirectories and the published files alone, since the
// kernel serves it to every caller. The kernel drops it at every change
// made through it; every other change of the files the directory holds
// (a publish at a writer's close, an eviction, a removal behind the
// kernel's back) passes through a tier's index and reaches
// vfs.CachedListings.Changed with the file's key, which names the directory.
//
// As a shard's, the cached listing registers again each time it is taken
// (at the first read of an open, and at a rewind), not only at the open:
// the kernel refills a cache it was told to drop through the same open
// directory, and that refill must be followed too (vfs.CachedListings.Taken).
//
// Not cached where a tier is shared with other daemons: a subdirectory
// another daemon makes there passes through no index of this one.

// entries lists the directory (vfs.ListFilesDir) with its dots and the
// entries' numbers. The published files' keys come with it:
// ents[nsub+i] is files[i], nsub the dots and the subdirectories.
func (o Ops) entries(ctx context.Context, published bool) (ents []fuse.DirEntry, files []format.Key, nsub int) {
	p := o.x.Host.Caller(ctx)
	l := vfs.ListFilesDir(o.x.Store, o.model, o.dir, p.Tgid, p.Uid, published)
	ents = make([]fuse.DirEntry, 0, 2+len(l.Subdirs)+len(l.Files))
	ents = append(ents, o.x.Host.Dots(o.model, o.dir)...)
	for _, d := range l.Subdirs {
		ents = append(ents, fuse.DirEntry{Name: d, Mode: syscall.S_IFDIR,
			Ino: o.x.Inos.Peek(ino.DirName(o.model, format.JoinFilePath(o.dir, d)))})
	}
	for _, k := range l.Files {
		ents = append(ents, fuse.DirEntry{Name: k.FileName(), Mode: syscall.S_IFREG,
			Ino: o.x.Inos.Peek(ino.FileVersion(k, o.x.Store.Writes().Gen(k)))})
	}
	for _, w := range l.Writing {
		ents = append(ents, fuse.DirEntry{Name: w.Name(), Mode: syscall.S_IFREG, Ino: vfs.PendingIno(w)})
	}
	return ents, l.Files, 2 + len(l.Subdirs)
}

// listing is the vfs.ListingKey of the directory. An entry of x.Listings
// is kept until a change after its listing was taken, or until the
// kernel forgets the directory's node (OnForget), so there are no more of
// them than directories the kernel holds.
func (o Ops) listing() vfs.ListingKey { return vfs.FilesListingKey(o.model, o.dir) }

// Opendir opens the directory: with a cached listing when no file is
// being written in it and no tier is shared.
func (o Ops) Opendir(ctx context.Context) (gofs.FileHandle, uint32, syscall.Errno) {
	h := &openDir{o: o}
	if !vfs.CacheableFilesDir(o.x.Store, o.model, o.dir) {
		return h, 0, 0
	}
	h.cached = true
	o.x.Listings.Opened(o.listing(), o.node, o.dropListing)
	return h, fuse.FOPEN_CACHE_DIR | fuse.FOPEN_KEEP_CACHE, 0
}

// dropListing drops the kernel's cached listing of the directory.
func (o Ops) dropListing() {
	if errno := o.node.NotifyContent(0, 0); errno != 0 && errno != o.x.Errnos.Missing {
		o.x.Log.Debug("listing invalidation", "dir", o.model+"/"+o.dir, "errno", errno)
	}
}

// openDir is an open directory of a files model. Its listing
// (vfs.DirListing) is taken at the first read and again at a rewind
// (offset 0). What it holds is charged to the user who took it
// (vfs/user_budget.go) until the next take or the release.
type openDir struct {
	o      Ops
	cached bool // opened with FOPEN_CACHE_DIR

	mu  sync.Mutex
	l   vfs.DirListing[fuse.DirEntry]
	uid uint32 // who the listing is charged to
}

var (
	_ = (gofs.FileReaddirenter)((*openDir)(nil))
	_ = (gofs.FileSeekdirer)((*openDir)(nil))
	_ = (gofs.FileReleasedirer)((*openDir)(nil))
	_ = (gofs.FileLookuper)((*openDir)(nil))
)

// take lists the directory anew (under h.mu), or fails past the listing
// budget. A cached listing is registered first, served: any change from
// now on drops what the kernel caches of it.
func (h *openDir) take(ctx context.Context) syscall.Errno {
	h.drop()
	var ents []fuse.DirEntry
	var files []format.Key
	var nsub int
	var moves uint64
	byKey := h.o.x.Moves.Settled(func() {
		moves = h.o.x.Moves.Seq()
		if d, ok := h.o.node.Operations().(*Dir); ok {
			h.o = d.ops() // where it is now, once no move is in flight beneath it
		}
		if h.cached {
			h.o.x.Listings.Taken(h.o.listing(), h.o.node, h.o.dropListing)
		}
		ents, files, nsub = h.o.entries(ctx, h.cached)
	})
	if len(ents) == 2 && h.o.goneDir() {
		return h.o.x.Errnos.Missing // another host moved or removed it (shared.go)
	}
	uid := h.o.x.Host.Caller(ctx).Uid
	if err := h.o.x.Listed.Hold(uid, vfs.ListingCharge(len(ents))); err != nil {
		return h.o.x.Host.Fail("readdir", h.o.model+"/"+h.o.dir, err)
	}
	h.l.Take(ents, files, nsub, byKey, moves)
	h.uid = uid
	return 0
}

// drop gives back the listing h holds (under h.mu).
func (h *openDir) drop() {
	h.o.x.Listed.Free(h.uid, vfs.ListingCharge(h.l.Drop()))
}

// Lookup answers the lookup go-fuse makes of each entry of a READDIRPLUS
// answer (gofs.FileLookuper) as the directory's Lookup does, but a
// published file the listing returned last is looked up by the key the
// listing holds: its name was checked and its path hashed when it was
// written, and hashing it again was a tenth of the daemon's time in the
// first listing of a flat directory. The directory's own Lookup answers
// anything else, and any entry once a directory move began or ended
// since the listing was taken (the key may name a path the file left).
func (h *openDir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	o, key, moves, ok := h.listedFile(name)
	dir := o.node.Operations().(gofs.NodeLookuper)
	if !ok || !o.x.Moves.Quiet(moves) {
		return dir.Lookup(ctx, name, out)
	}
	ch, errno := o.lookupKey(ctx, name, key.Name, key, out)
	if o.x.Moves.Seq() == moves {
		return ch, errno
	}
	*out = fuse.EntryOut{} // a move began meanwhile: asked again, as DirMoves.Settled does
	return dir.Lookup(ctx, name, out)
}

// listedFile returns the listing's directory and, when name is the
// published file Readdirent returned last, its key and the DirMoves.Seq
// the listing was taken at (vfs.DirListing.LastFile).
func (h *openDir) listedFile(name string) (Ops, format.Key, uint64, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e, key, moves, ok := h.l.LastFile()
	return h.o, key, moves, ok && e.Name == name
}

// Releasedir gives back the listing.
func (h *openDir) Releasedir(ctx context.Context, flags uint32) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.drop()
}

// Readdirent returns the next entry, nil at the end.
func (h *openDir) Readdirent(ctx context.Context) (*fuse.DirEntry, syscall.Errno) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.l.Taken() {
		if errno := h.take(ctx); errno != 0 {
			return nil, errno
		}
	}
	e, off := h.l.Next() // go-fuse copies it before the next call
	if e != nil {
		e.Off = off
	}
	return e, 0
}

// Seekdir moves to offset off; offset 0 takes the listing anew.
func (h *openDir) Seekdir(ctx context.Context, off uint64) syscall.Errno {
	h.mu.Lock()
	defer h.mu.Unlock()
	if off == 0 || !h.l.Taken() {
		if errno := h.take(ctx); errno != 0 {
			return errno
		}
	}
	if !h.l.Seek(off) {
		return h.o.x.Errnos.BadOff
	}
	return 0
}
