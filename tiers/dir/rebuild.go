package dir

import (
	"cmp"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/layout/registry"
	"github.com/ucmfs/ucmfs/tiers/index"
	"github.com/ucmfs/ucmfs/tiers/rootfs"
	"github.com/ucmfs/ucmfs/tiers/tier"
)

// The index of a directory tier is rebuilt at start from directory
// listings and one stat per file; no file is read. Temp files are removed
// (in a shared directory only stale ones, since they may be another
// daemon's writes in flight: shared_temps.go). Names that break the layout
// are skipped with a log line. The LRU order is the files' mtime order.

const (
	staleTempAge   = 10 * time.Minute
	rebuildWorkers = 4  // shard directories listed at once
	maxNameLogs    = 10 // invalid names logged one by one, then counted
)

// rebuildScan collects what the workers find.
type rebuildScan struct {
	mu      sync.Mutex
	found   []*index.Entry
	bad     int // invalid names
	temps   int // temp files removed
	snapped int // shards taken from the snapshot
}

// notShardWhy is why a name in a model directory of shards is skipped,
// with what to do about a tree an engine filled (docs/format.md).
const notShardWhy = "not a shard directory (a model directory of any tree of files, as an engine fills it, is adopted as a files model once it holds an empty .ucmfs-tree)"

// skip logs an invalid name (the first few) and counts it.
func (t *Tier) skip(s *rebuildScan, path, why string) {
	s.mu.Lock()
	s.bad++
	n := s.bad
	s.mu.Unlock()
	if n <= maxNameLogs {
		t.log.Warn("tier rebuild: skipping a name outside the layout", "kind", t.kind, "path", path, "why", why)
	}
}

// rebuild fills the index from the directory tree (layoutWalk: the rules
// fsck checks too).
func (t *Tier) rebuild() error {
	s := &rebuildScan{}
	snap := t.loadSnapshot() // only a private tier rebuilds (privateDir.start)
	w := &layoutWalk{
		root:    t.fs,
		workers: rebuildWorkers,
		readDir: t.readDir,
		listShard: func(dir string) (ents []shardEntry, err error) {
			err = t.do("scan", func() error {
				if t.fromSnapshot(s, snap, dir) {
					return nil
				}
				ents, err = listShard(t.fs, dir)
				return err
			}, nil)
			return ents, err
		},
		bad: func(rel string, _ error) {
			why := "not a model directory"
			if strings.Contains(rel, "/") {
				why = notShardWhy
			}
			t.skip(s, t.fs.Path(rel), why)
		},
		leftover: func(rel string) {
			if strings.Contains(rel, "/") { // at the root: hidden, not ours
				t.skip(s, t.fs.Path(rel), notShardWhy)
			}
		},
		shard: func(model, hh string, ents []shardEntry) { t.adoptShard(s, model, hh, ents) },
		dirError: func(rel string, err error) bool {
			return !(strings.Count(rel, "/") == 1 && tier.IsENOENT(err)) // a shard removed meanwhile
		},
	}
	if err := w.run(); err != nil {
		return fmt.Errorf("%s tier: rebuild: %w", t.kind, err)
	}
	slices.SortFunc(s.found, func(a, b *index.Entry) int { return cmp.Compare(a.MTime, b.MTime) })
	t.idx.AdoptAll(s.found)
	u := t.idx.Usage()
	t.log.Info("tier index rebuilt", "kind", t.kind, "dir", t.root, "files", u.Files, "bytes", u.Used,
		"skipped", s.bad, "temp_removed", s.temps, "shards_from_snapshot", s.snapped)
	return nil
}

// fromSnapshot takes the shard directory dir's entries (dir beneath the
// root: <model>/<hh>) from the snapshot when its part there is trusted
// (snapshot.go), and reports whether it did.
func (t *Tier) fromSnapshot(s *rebuildScan, snap snapshot, dir string) bool {
	if snap == nil {
		return false
	}
	model := path.Dir(dir)
	hh, ok := format.ParseShard(path.Base(dir))
	if !ok {
		return false
	}
	part := snap.shard(t.fs, dir, model, hh)
	if part == nil {
		return false
	}
	found := part.entries(model)
	s.mu.Lock()
	s.found = append(s.found, found...)
	s.snapped++
	s.mu.Unlock()
	return true
}

// readDir lists the directory rel beneath the root under the operation
// timeout (links left out).
func (t *Tier) readDir(rel string) ([]rootfs.Entry, error) {
	var ents []rootfs.Entry
	err := t.do("readdir", func() (err error) {
		ents, err = t.fs.ReadDir(rel)
		return err
	}, nil)
	return ents, err
}

// adoptShard collects the files of one <model>/<hh> directory (or of a
// directory <model>/<hh...> of a tree of Files), removes the temp files a
// crash left there, and logs the names outside the layout.
func (t *Tier) adoptShard(s *rebuildScan, model, hh string, ents []shardEntry) {
	dir := model
	if hh != "" {
		dir += "/" + hh
	}
	t.removeTemps(s, dir, ents)
	found := make([]*index.Entry, 0, len(ents))
	// One allocation for the shard's entries: an entry removed later is
	// freed with the last of its shard's (at most what the rebuild found).
	block := index.NewEntries(model, len(ents))
	for _, e := range ents {
		switch {
		case e.class == fileEntry:
			n := &block[len(found)]
			n.ID, n.Kind, n.Size = e.id, e.kind, e.size
			if registry.Of(format.Key{Kind: e.kind}).Tree() {
				n.SetName(format.JoinFilePath(hh, e.name))
			}
			n.MTime = time.Unix(e.mtime.Unix()).UnixNano()
			found = append(found, n)
		case e.class == badEntry, !strings.HasPrefix(e.name, tier.TmpPrefix):
			t.skip(s, t.fs.Path(dir+"/"+e.name), "not a block, sidecar or regular file")
		}
	}
	s.mu.Lock()
	s.found = append(s.found, found...)
	s.mu.Unlock()
}

// removeTemps removes the temp files a crash left in the shard directory
// dir (beneath the root) of a private tier (a shared one removes only the stale temps of
// dead writers as it lists: removeForeignTemps).
func (t *Tier) removeTemps(s *rebuildScan, dir string, ents []shardEntry) {
	for _, e := range ents {
		if e.class != leftoverEntry || !strings.HasPrefix(e.name, tier.TmpPrefix) && !strings.HasPrefix(e.name, tier.ModelMetaName+tier.TmpPrefix) {
			continue // another '.' name of a shard: not ours to remove
		}
		if err := t.fs.Unlink(dir + "/" + e.name); err == nil {
			s.mu.Lock()
			s.temps++
			s.mu.Unlock()
		}
	}
}
