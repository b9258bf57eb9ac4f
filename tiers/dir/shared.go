package dir

import (
	"errors"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/layout/registry"
	"github.com/ucmfs/ucmfs/tiers/tier"
	"golang.org/x/sync/singleflight"
	"golang.org/x/sys/unix"
)

// A shared directory tier (nfs, ds3fs) is changed by other daemons: they
// publish blocks, make models, evict and unlink. Its index is therefore a
// cache of the directory, trusted for the revalidation TTL only:
//
//   - Each shard directory <model>/<hh> is checked at most once per TTL,
//     when a key of it is asked: one stat of the directory. If its mtime is
//     the one recorded at the last listing, every entry of the shard is
//     still right; otherwise the shard is listed again and the index made
//     to match (files gone are dropped, files new adopted). A directory
//     mtime younger than mtimeSlack is not trusted (a change in the same
//     clock tick would not move it): such a shard is listed at each check.
//   - A key the index lacks is looked up on disk (a stat), so a block
//     another daemon just published is found at once; the kernel's
//     negative TTL bounds how often a miss reaches the daemon. Batch
//     lookups (.ucm/lookup), which no kernel cache fronts, take a miss in
//     a shard listed (or found unchanged since) within the TTL as final.
//   - The models are the index's plus the root directory's listing, read
//     at most once per TTL; a model name not in either is stat'ed.
//   - At start nothing is read. The first check of a shard the index
//     knows nothing of only records its mtime (keys are then looked up
//     one by one); a background scan lists every shard once, so the
//     tier's use is known and eviction may begin (not before).

// mtimeSlack is how old a shard directory's mtime must be before an
// unchanged mtime proves the shard unchanged.
const mtimeSlack = time.Second

// shardRef names one shard directory of a tier.
type shardRef struct {
	model string
	hh    byte
}

// shardCheck is what the last check of a shard found.
type shardCheck struct {
	at     time.Time     // when it was checked
	mtime  unix.Timespec // the directory's mtime then, zero when not trusted
	listed bool          // the index holds every file of the shard as of at
}

// sharedView is the revalidation state of a shared directory tier.
type sharedView struct {
	ttl     time.Duration // <0: revalidation off (the index is trusted)
	flights singleflight.Group

	mu       sync.Mutex
	shards   map[shardRef]shardCheck
	models   map[string]struct{} // the root's listing
	modelsAt time.Time
	files    map[format.Key]time.Time // when each File was last checked (shared_files.go)
	trees    map[string]treeCheck     // when each directory of a tree was last checked (shared_tree.go)
	// noDirMTime: the filesystem does not move a directory's mtime
	// (shared_probe.go): every check of a shard lists it.
	noDirMTime bool

	scanned  chan struct{}      // closed when the background scan is done
	gone     func([]format.Key) // told of the keys found gone (the stack's)
	replaced func([]format.Key) // told of the Files found replaced by another host
}

// sharedDir is a directory other daemons use too: its index is
// revalidated within a TTL (sharedView), eviction goes by the mtime every
// daemon moves on use and spares files younger than keepRecent
// (shared_evict.go), and the stack reads its files only through copies.
type sharedDir struct {
	*Tier
	view        sharedView
	keepRecent  time.Duration // never evict a file younger
	rescan      time.Duration // how often the background scan checks every shard again
	owed        owedSet       // files written back to a private tier while this one was down (shared_owed.go)
	remountBusy atomic.Bool   // a look for a remounted client is under way (shared_remount.go)
	size        sizeCheck     // the share measured against its size (shared_size.go)
	removed     removals      // the recent removals of Files (shared_copies.go)
}

// newSharedDir is the sharing of shared tier t, as cfg sets it.
func newSharedDir(t *Tier, cfg Config) *sharedDir {
	sd := &sharedDir{Tier: t, keepRecent: cfg.KeepRecent, rescan: cfg.Rescan,
		view: sharedView{ttl: cfg.Revalidate, shards: make(map[shardRef]shardCheck), scanned: make(chan struct{})}}
	sd.size.sized = cfg.Capacity > 0
	if cfg.Revalidate == 0 {
		sd.view.ttl = DefaultRevalidate
	}
	if sd.keepRecent <= 0 {
		sd.keepRecent = DefaultKeepRecent
	}
	if sd.rescan <= 0 {
		sd.rescan = DefaultRescan
	}
	return sd
}

// start reads nothing: lookups fall through to the directory while the
// background scan (serve) builds the index.
func (t *sharedDir) start() error { return nil }

// serve starts the background scan (shared_scan.go).
func (t *sharedDir) serve(sizeless bool) {
	t.wg.Add(1)
	go t.scanShared(sizeless)
}

// scanned reports whether the background scan is done.
func (t *sharedDir) scanned() bool {
	select {
	case <-t.view.scanned:
		return true
	default:
		return false
	}
}

// revalidate makes the index's entries of key's shard at most one TTL
// old.
func (t *sharedDir) revalidate(key format.Key) {
	if t.view.ttl < 0 {
		return
	}
	if registry.Of(key).Tree() {
		t.revalidateFile(key) // a tree of Files has no shard directories (shared_files.go)
		return
	}
	ref := shardRef{model: key.Model, hh: key.ID[0]}
	v := &t.view
	v.mu.Lock()
	c, ok := v.shards[ref]
	v.mu.Unlock()
	if ok && time.Since(c.at) < v.ttl || tier.CheckKey(key) != nil {
		return
	}
	v.flights.Do(ref.model+"/"+format.ShardName(ref.hh), func() (any, error) {
		t.checkShard(ref, c, false)
		return nil, nil
	})
}

// checkShard stats the shard directory and lists it again unless its
// mtime says it has not changed since last.
func (t *sharedDir) checkShard(ref shardRef, last shardCheck, force bool) {
	dir := ref.model + "/" + format.ShardName(ref.hh)
	now := time.Now()
	var st unix.Stat_t
	err := t.do("stat", func() error { return t.fs.Stat(dir, &st) }, nil)
	switch {
	case err != nil && !tier.IsENOENT(err) && !errors.Is(err, unix.ESTALE):
		return // the directory fails: keep what we know, try again later
	case err != nil: // the shard (or its model) is gone
		t.reconcile(ref, t.idx.ShardKeys(ref.model, ref.hh, nil), nil)
		t.recordShard(ref, shardCheck{at: now, listed: true})
		return
	}
	t.view.mu.Lock()
	force = force || t.view.noDirMTime
	t.view.mu.Unlock()
	if !force && last.mtime != (unix.Timespec{}) && st.Mtim == last.mtime {
		t.recordShard(ref, shardCheck{at: now, mtime: st.Mtim, listed: last.listed})
		return
	}
	before := t.idx.ShardKeys(ref.model, ref.hh, nil) // what the listing may drop
	if !force && last.at.IsZero() && len(before) == 0 && trusted(st.Mtim, now) {
		// First look at a shard the index knows nothing of: its mtime is
		// the baseline; the keys asked are looked up one by one, and the
		// background scan lists it.
		t.recordShard(ref, shardCheck{at: now, mtime: st.Mtim})
		return
	}
	var ents []shardEntry
	err = t.do("scan", func() error {
		var err error
		ents, err = listShard(t.fs, dir)
		return err
	}, nil)
	if err != nil {
		return
	}
	t.removeForeignTemps(dir, ents)
	t.reconcile(ref, before, ents)
	c := shardCheck{at: now, listed: true}
	if trusted(st.Mtim, now) {
		c.mtime = st.Mtim
	}
	t.recordShard(ref, c)
}

// trusted reports whether a directory mtime is old enough that a change
// made after it was read would move it.
func trusted(mtime unix.Timespec, now time.Time) bool {
	return now.Sub(time.Unix(mtime.Unix())) > mtimeSlack
}

func (t *sharedDir) recordShard(ref shardRef, c shardCheck) {
	t.view.mu.Lock()
	t.view.shards[ref] = c
	t.view.mu.Unlock()
}

// reconcile makes the index's entries of a shard those of its listing
// ents: the keys of before (the index's, taken before the listing) not
// listed are dropped and the stack told; files not indexed are adopted.
// A key committed here while the listing ran is not in before: kept.
func (t *sharedDir) reconcile(ref shardRef, before []format.Key, ents []shardEntry) {
	listed := make(map[format.Key]shardEntry, len(ents))
	for _, e := range ents {
		if e.class == fileEntry {
			listed[format.Key{Model: ref.model, ID: e.id, Kind: e.kind}] = e
		}
	}
	var gone []format.Key
	for _, k := range before {
		if _, ok := listed[k]; ok || registry.Of(k).Tree() {
			continue // a File is in a tree, not in a shard directory
		}
		if _, ok := t.idx.Remove(k); ok {
			gone = append(gone, k)
		}
	}
	if len(gone) > 0 && t.view.gone != nil {
		t.view.gone(gone)
	}
	for k := range listed {
		if t.idx.Has(k) {
			delete(listed, k)
		}
	}
	found := make([]tier.Info, 0, len(listed))
	for k, e := range listed {
		found = append(found, tier.Info{Key: k, Size: e.size, MTime: time.Unix(e.mtime.Unix())})
	}
	sort.Slice(found, func(i, j int) bool { return found[i].MTime.Before(found[j].MTime) })
	for _, in := range found {
		t.adoptFound(tier.NewEntry(in))
	}
}

// sharedModels returns the model directories at the tier's root, listed
// at most once per TTL.
func (t *sharedDir) sharedModels() map[string]struct{} {
	v := &t.view
	v.mu.Lock()
	if v.models != nil && (v.ttl < 0 || time.Since(v.modelsAt) < v.ttl) {
		m := v.models
		v.mu.Unlock()
		return m
	}
	v.mu.Unlock()
	m, _, _ := v.flights.Do("\x00models", func() (any, error) {
		ents, err := t.readDir(".")
		names := make(map[string]struct{}, len(ents))
		for _, e := range ents {
			if e.IsDir() && format.ValidateModel(e.Name()) == nil {
				names[e.Name()] = struct{}{}
			}
		}
		if err != nil {
			v.mu.Lock()
			old := v.models
			v.mu.Unlock()
			return old, nil // keep the last listing while the root fails
		}
		v.mu.Lock()
		v.models, v.modelsAt = names, time.Now()
		v.mu.Unlock()
		return names, nil
	})
	names, _ := m.(map[string]struct{})
	return names
}

// HasModel reports whether the tier holds model: in its index, or, in a
// shared directory, as a model directory at its root (another daemon's).
func (t *Tier) HasModel(model string) bool {
	if n, _ := t.idx.ModelUsage(model); n > 0 {
		return true
	}
	return t.share.hasModel(model)
}

// hasModel reports whether model is a model directory at the root.
func (t *sharedDir) hasModel(model string) bool {
	if format.ValidateModel(model) != nil {
		return false
	}
	if _, ok := t.sharedModels()[model]; ok {
		return true
	}
	var st unix.Stat_t
	err := t.do("stat", func() error { return t.fs.Stat(model, &st) }, nil)
	return err == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR
}

// models adds the model directories at the root to names, sorted.
func (t *sharedDir) models(names []string) []string {
	for m := range t.sharedModels() {
		names = append(names, m)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// stat answers Stat for a shared tier: the revalidated index, else a
// stat of the file.
func (t *sharedDir) stat(key format.Key) (tier.Info, error) {
	t.revalidate(key)
	return t.sharedGet(key)
}

// get is sharedGet as the stack asks it.
func (t *sharedDir) get(key format.Key) (tier.Info, bool) {
	info, err := t.sharedGet(key)
	return info, err == nil
}

// sharedGet is sharedStat once key's shard is revalidated: a key the
// index lacks is looked for on disk.
func (t *sharedDir) sharedGet(key format.Key) (tier.Info, error) {
	if info, _, ok := tier.IndexGet(t.idx, key); ok {
		return info, nil
	}
	if tier.CheckKey(key) != nil {
		return tier.Info{}, t.notFound(key)
	}
	return t.lookup(key)
}

// has is sharedGet for batch lookups (HasBlock, .ucm/lookup),
// which no kernel cache stands in front of: a key the index lacks is a
// miss without a syscall when its shard was listed (or found unchanged
// since a listing) within the TTL, else it is looked for on disk.
func (t *sharedDir) has(key format.Key) bool {
	if t.idx.Has(key) {
		return true
	}
	if tier.CheckKey(key) != nil || t.listedFresh(key) {
		return false
	}
	_, err := t.lookup(key)
	return err == nil
}

// listedFresh reports whether the index holds all of key's shard as of
// less than a TTL ago.
func (t *sharedDir) listedFresh(key format.Key) bool {
	v := &t.view
	if v.ttl < 0 {
		return false
	}
	v.mu.Lock()
	c, ok := v.shards[shardRef{model: key.Model, hh: key.ID[0]}]
	v.mu.Unlock()
	return ok && c.listed && time.Since(c.at) < v.ttl
}

// inPlace is false: a file of a shared directory may vanish under an
// open descriptor (NFS: ESTALE after another host's unlink), so reads go
// to a copy.
func (t *sharedDir) inPlace() bool { return false }

// opensUnindexed is true: another daemon may have published the file.
func (t *sharedDir) opensUnindexed() bool { return true }

// healthErr: on a shared tier ESTALE is another host's delete of a file
// (a miss), not a failing directory; ENOTCONN may be a client mounted
// again at the path (checkRemount).
func (t *sharedDir) healthErr(err error) error {
	t.checkRemount(err)
	if errors.Is(err, unix.ESTALE) {
		return nil
	}
	return err
}

// release has nothing to give back: a shared directory is not locked
// and keeps no snapshot.
func (t *sharedDir) release(bool) {}

func (t *sharedDir) recordOwner(uint32) error { return nil }

// GoneErr reports an error that says a file of a shared directory is
// gone: ENOENT, or ESTALE (NFS: another host removed it).
func GoneErr(err error) bool {
	return tier.IsENOENT(err) || errors.Is(err, unix.ESTALE)
}
