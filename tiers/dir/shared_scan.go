package dir

import (
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/tiers/tier"
	"golang.org/x/sys/unix"
)

// The background scan of a shared tier (shared.go): what a rebuild at
// start does for an unshared tier, done while the tier already serves.

// DefaultRescan is how often a shared tier checks every shard it knows
// again by default (Config.Rescan): a stat of each directory, a
// listing of those that changed, so its counts follow other daemons'
// publishes and deletes in shards no lookup asks about.
const DefaultRescan = time.Minute

// scanShared lists every shard of a shared tier once, in the background,
// so its use is known; then it sets the capacity a tier without a size
// gets and lets eviction begin. From then on it checks every shard again
// each t.rescan.
func (t *sharedDir) scanShared(sizeless bool) {
	defer t.wg.Done()
	t.probeShared()
	start := time.Now()
	done := t.walkShards(walkList)
	if done && sizeless {
		t.setFreeCapacity()
	}
	close(t.view.scanned)
	if !done {
		return
	}
	u := t.idx.Usage()
	t.log.Info("shared tier index built in the background", "kind", t.kind, "dir", t.root,
		"files", u.Files, "bytes", u.Used, "took", time.Since(start).Round(time.Millisecond))
	tick := time.NewTicker(t.rescan)
	defer tick.Stop()
	for {
		select {
		case <-t.stop:
			return
		case <-tick.C:
		}
		if t.view.ttl >= 0 && !t.walkShards(walkStale) {
			return
		}
	}
}

// walkMode is what walkShards does with each shard.
type walkMode int

const (
	walkList  walkMode = iota // list every shard (the first scan)
	walkStale                 // check, as a lookup would, the shards not checked within the TTL (the rescan)
	walkAll                   // check every shard, whenever it was checked last (a measure of the share's use, shared_size.go)
)

// walkShards checks every shard of every model of the directory and of
// the index: listing each (walkList), or as a lookup would (a stat, and a
// listing where the directory changed). It reports false when the tier
// was closed meanwhile.
func (t *sharedDir) walkShards(mode walkMode) bool {
	force := mode == walkList
	jobs := make(chan shardRef)
	var wg sync.WaitGroup
	for i := 0; i < rebuildWorkers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ref := range jobs {
				t.view.mu.Lock()
				last, ok := t.view.shards[ref]
				t.view.mu.Unlock()
				if mode == walkStale && ok && time.Since(last.at) < t.view.ttl {
					continue
				}
				t.view.flights.Do(ref.model+"/"+format.ShardName(ref.hh), func() (any, error) {
					t.checkShard(ref, last, force)
					return nil, nil
				})
			}
		}()
	}
	defer wg.Wait()
	defer close(jobs)
	names := t.idx.ModelNames()
	for m := range t.sharedModels() {
		names = append(names, m)
	}
	sort.Strings(names)
	names = slices.Compact(names)
	for _, m := range names {
		if tier.IsTree(t.fs, m) {
			t.adoptTree(m)
			continue
		}
		var shards []byte
		ents, err := t.readDir(m)
		for _, e := range ents {
			if hh, ok := format.ParseShard(e.Name()); ok && e.IsDir() {
				shards = append(shards, hh)
			}
		}
		if GoneErr(err) { // the model went: its shards' entries go too
			for hh := 0; hh < 256; hh++ {
				shards = append(shards, byte(hh))
			}
		}
		t.view.mu.Lock()
		for ref := range t.view.shards { // shards checked before, gone since
			if ref.model == m {
				shards = append(shards, ref.hh)
			}
		}
		t.view.mu.Unlock()
		slices.Sort(shards)
		shards = slices.Compact(shards)
		for _, hh := range shards {
			select {
			case jobs <- shardRef{model: m, hh: hh}:
			case <-t.stop:
				return false
			}
		}
	}
	return true
}

// setFreeCapacity sets the capacity of a tier without a size: what it
// holds plus the free space of its filesystem.
func (t *Tier) setFreeCapacity() error {
	var st unix.Statfs_t
	if err := t.do("statfs", func() error { return t.fs.Statfs(&st) }, nil); err != nil {
		return err
	}
	bs := st.Frsize
	if bs == 0 {
		bs = st.Bsize
	}
	t.idx.SetCapacity(t.idx.Usage().Charged + int64(st.Bavail)*bs)
	return nil
}

// adoptTree indexes the files of the tree of Files of model that the
// index does not hold yet (a files model on a shared tier: the files its
// daemons wrote), and removes the stale temp files it meets (staleTemp;
// they stayed for good: only shard directories were swept). Files are not revalidated one by one as blocks are
// (revalidate leaves them out): a file another daemon removes stays
// indexed here until a read finds it gone.
func (t *sharedDir) adoptTree(model string) {
	var walk func(rel string)
	walk = func(rel string) {
		var ents []shardEntry
		var subdirs []string
		err := t.do("scan", func() error {
			var err error
			ents, subdirs, err = listTreeDir(t.fs, model, rel)
			return err
		}, nil)
		if err != nil {
			return
		}
		dir := model
		if rel != "" {
			dir += "/" + rel
		}
		t.removeForeignTemps(dir, ents) // as a shard's listing does: a crashed writer's leftovers
		for _, e := range ents {
			if e.class != fileEntry {
				continue
			}
			k := format.FileKey(model, format.JoinFilePath(rel, e.name))
			if !t.idx.Has(k) {
				t.adoptFound(tier.NewEntry(tier.Info{Key: k, Size: e.size, MTime: time.Unix(e.mtime.Unix())}))
			}
		}
		for _, d := range subdirs {
			walk(format.JoinFilePath(rel, d))
		}
	}
	walk("")
}
