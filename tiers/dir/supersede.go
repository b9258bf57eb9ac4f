package dir

import (
	"errors"
	"sync"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/tiers/index"
	"github.com/ucmfs/ucmfs/tiers/rootfs"
	"golang.org/x/sys/unix"
)

// Superseded files. A published file that a new version replaces (a
// rename over it, a rewrite: the files layout, whose names take new
// versions) leaves every tier's index at once, so that no reader finds it
// from then on. Its file stays where it is on each directory tier,
// superseded, until the new version is committed there: that commit
// renames over it, one atomic step of the filesystem. So a name is on a
// persistent tier at every moment once one of its versions was, and a
// kill -9 before the new version's write-back leaves the old one, which
// the next start adopts; as a local disk keeps a file's old contents when
// the crash comes before a rename over it.
//
// Nothing serves a superseded file: it is in no index, and the paths that
// adopt a file found on disk (a shared tier's lookups and listings, an
// open of a file the index lacks) pass it over. If the new version fails
// to publish, the old one is adopted again (RestoreSuperseded): the name
// is what it was, as a failed rename(2) leaves it. A superseded file's
// bytes do not count against the tier's capacity (the new version's
// commit, which renames over it, would otherwise need room for both, and
// make a near-full tier evict for nothing); the filesystem's own free
// space, which the commit checks, sees them. Keys stay superseded only
// until their new version is written back or removed, so memory's dirty
// bytes bound what is on disk beyond the capacity.
//
// The stack supersedes, commits and drops under the key's stripe lock
// (stack_supersede.go); mu here orders a supersede against an adopt.

// supersededSet is a directory tier's superseded files.
type supersededSet struct {
	mu sync.Mutex
	m  map[format.Key]*index.Entry // key → the superseded file's index entry
}

// Supersede takes key's published file out of the index and leaves it on
// disk, superseded, and reports true; false when the index does not know
// key (nothing of it here, or a file this daemon never indexed: the
// caller removes that one as before).
func (t *Tier) Supersede(key format.Key) bool {
	sp := &t.sup
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if _, ok := sp.m[key]; ok {
		// Superseded already, by a version not written back yet: the file
		// on disk is still the last one written here.
		t.idx.Remove(key)
		return true
	}
	e, known := t.idx.Remove(key)
	if !known {
		return false
	}
	if sp.m == nil {
		sp.m = make(map[format.Key]*index.Entry)
	}
	sp.m[key] = e
	return true
}

// superseded reports whether key's file here is superseded: a commit of
// key renames over it.
func (t *Tier) superseded(key format.Key) bool {
	sp := &t.sup
	sp.mu.Lock()
	defer sp.mu.Unlock()
	_, ok := sp.m[key]
	return ok
}

// HasFile reports whether the tier has a file of key: the published
// version it indexes, or one a newer version (not committed here yet)
// superseded.
func (t *Tier) HasFile(key format.Key) bool {
	return t.idx.Has(key) || t.superseded(key)
}

// settle forgets key's superseded file, renamed over or unlinked.
func (t *Tier) settle(key format.Key) {
	sp := &t.sup
	sp.mu.Lock()
	defer sp.mu.Unlock()
	delete(sp.m, key)
}

// RestoreSuperseded puts key's superseded file back in the index, as the
// published version it was, and reports whether it had one: the version
// that replaced it was not published after all.
func (t *Tier) RestoreSuperseded(key format.Key) bool {
	sp := &t.sup
	sp.mu.Lock()
	defer sp.mu.Unlock()
	e, ok := sp.m[key]
	if ok {
		delete(sp.m, key)
		t.idx.Adopt(e)
	}
	return ok
}

// supersededSize is the size of key's superseded file, 0 when none.
func (t *Tier) supersededSize(key format.Key) int64 {
	sp := &t.sup
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if e, ok := sp.m[key]; ok {
		return e.Size
	}
	return 0
}

// DropSuperseded unlinks key's superseded file, if it has one here: its
// new version went to another tier.
func (t *Tier) DropSuperseded(key format.Key) error {
	if !t.superseded(key) {
		return nil
	}
	return t.remove(key, false)
}

// anySuperseded reports whether a file of the tier is superseded.
func (t *Tier) anySuperseded() bool {
	sp := &t.sup
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return len(sp.m) > 0
}

// forgetSuperseded forgets the superseded files of model, whose files
// RemoveModel unlinks.
func (t *Tier) forgetSuperseded(model string) {
	sp := &t.sup
	sp.mu.Lock()
	defer sp.mu.Unlock()
	for k := range sp.m {
		if k.Model == model {
			delete(sp.m, k)
		}
	}
}

// adoptFound records e, a file found on disk that the index lacks, unless
// it is superseded. It reports whether e was recorded.
func (t *Tier) adoptFound(e *index.Entry) bool {
	sp := &t.sup
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if _, ok := sp.m[e.Key()]; ok {
		return false
	}
	return t.idx.Adopt(e)
}

// replace moves tmp to dst (beneath r) over the file there (a superseded
// version): rename(2), atomic on a local filesystem and on NFS.
func (p *publisher) replace(r rootfs.FS, tmp, dst string) error {
	for {
		err := renameOnce(r, tmp, dst, 0)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
		// Interrupted: the rename happened or not; try again only if not.
		if moved(r, tmp, dst) {
			return nil
		}
	}
}

// replaceShared is replace on a shared tier whose filesystem has no
// no-replace rename (publish falls back to link + unlink): the file
// there is removed, then tmp published as a new file (link + unlink),
// never renamed over it. Such a filesystem's rename over a name is not
// atomic everywhere: GlusterFS's distribute layer, with two hosts
// replacing one name at once (each one's write-back superseding the
// other's version), left the data file of the replaced version on its
// brick under the name, unseen until the name was removed, when it came
// back (a host found the version before its removal again, and SGLang's
// store skipped the name). A link never replaces: a version another host
// published between the two is ErrExist, which the write-back takes as
// it takes any other host's version (move_writeback.go). Meanwhile the
// name is absent for a moment, a miss to the other hosts. (Not on a
// private tier: a crash between the two would lose the version there.)
func (p *publisher) replaceShared(r rootfs.FS, tmp, dst string) error {
	if p.mode.Load() != pubLink {
		return p.replace(r, tmp, dst)
	}
	if err := r.Unlink(dst); err != nil && !errors.Is(err, unix.ENOENT) {
		return err
	}
	return p.publish(r, tmp, dst)
}
