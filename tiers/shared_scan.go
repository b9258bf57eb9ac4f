package tiers

import (
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/ucmfs/ucmfs/hashdir"
	"golang.org/x/sys/unix"
)

// The background scan of a shared tier (shared.go): what a rebuild at
// start does for an unshared tier, done while the tier already serves.

// scanShared lists every shard of a shared tier once, in the background,
// so its use is known; then it sets the capacity a tier without a size
// gets and lets eviction begin.
func (t *DirTier) scanShared(sizeless bool) {
	defer t.wg.Done()
	defer close(t.view.scanned)
	start := time.Now()
	models := t.sharedModels()
	jobs := make(chan shardRef)
	var wg sync.WaitGroup
	for i := 0; i < rebuildWorkers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ref := range jobs {
				t.view.flights.Do(ref.model+"/"+hashdir.ShardName(ref.hh), func() (any, error) {
					t.checkShard(ref, shardCheck{}, true)
					return nil, nil
				})
			}
		}()
	}
	names := make([]string, 0, len(models))
	for m := range models {
		names = append(names, m)
	}
	sort.Strings(names)
	for _, m := range names {
		ents, _ := t.readDir(filepath.Join(t.root, m))
		for _, e := range ents {
			hh, ok := hashdir.ParseShard(e.Name())
			if !ok || !e.IsDir() {
				continue
			}
			select {
			case jobs <- shardRef{model: m, hh: hh}:
			case <-t.stop:
				close(jobs)
				wg.Wait()
				return
			}
		}
	}
	close(jobs)
	wg.Wait()
	if sizeless {
		t.setFreeCapacity()
	}
	u := t.idx.usage()
	t.log.Info("shared tier index built in the background", "kind", t.kind, "dir", t.root,
		"files", u.Files, "bytes", u.Used, "took", time.Since(start).Round(time.Millisecond))
}

// setFreeCapacity sets the capacity of a tier without a size: what it
// holds plus the free space of its filesystem.
func (t *DirTier) setFreeCapacity() error {
	var st unix.Statfs_t
	if err := t.do("statfs", func() error { return unix.Statfs(t.root, &st) }, nil); err != nil {
		return err
	}
	bs := st.Frsize
	if bs == 0 {
		bs = st.Bsize
	}
	t.idx.setCapacity(t.idx.usage().Used + int64(st.Bavail)*bs)
	return nil
}
