package dir

import (
	"errors"
	"path"
	"strings"
	"time"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/layout/registry"
	"github.com/ucmfs/ucmfs/tiers/index"
	"github.com/ucmfs/ucmfs/tiers/tier"
	"golang.org/x/sys/unix"
)

// The directories of a files model on a shared tier. Their Files have no
// shard directory whose mtime says that one changed (shared_files.go), so
// a listing of such a directory by this host showed its index alone:
// what another host published there came at a lookup by name or at the
// background rescan (a minute), what another host moved or removed was
// listed until a read found it gone, and a directory found once was
// listed for good. Now a listing of a directory checks it on the share
// at most once per TTL (revalidateTreeDir):
//
//   - the directory is listed on the share; its Files the index lacks are
//     adopted, those the index holds and the share no longer has are
//     dropped (and the stack told, as for a block of a listed shard);
//   - a directory the share no longer has (another host moved or removed
//     it) drops every File the index holds in it and beneath it, and is
//     reported gone: the stack and the store forget it;
//   - a check that found a change forgets when the model's other
//     directories were checked: a host that sees d1 gone after another
//     host's mv d1 d2 lists d2 from the share next, not from an index
//     older than the move.

// treeCheck is what the last check of a directory of a tree found.
type treeCheck struct {
	at   time.Time
	gone bool      // the share had no such directory
	made time.Time // when this host made it (madeTreeDir): a listing begun before finds it gone
}

// treeChecksMax bounds the map of directory checks, as fileChecksMax
// bounds the Files'.
const treeChecksMax = 1 << 14

// RevalidateTreeDir makes the index's Files of the directory rel ("": the
// root) of model's tree follow the share, at most once per TTL, on a
// shared tier (nothing on a private one). It returns the keys it dropped
// (the share no longer has them), and gone when the share no longer has
// the directory.
func (t *Tier) RevalidateTreeDir(model, rel string) (dropped []format.Key, gone bool) {
	sd := t.sharedDir()
	if sd == nil || sd.view.ttl < 0 || format.ValidateModel(model) != nil ||
		rel != "" && format.ValidateFilePath(rel) != nil {
		return nil, false
	}
	return sd.revalidateTreeDir(model, rel)
}

func (t *sharedDir) revalidateTreeDir(model, rel string) ([]format.Key, bool) {
	v := &t.view
	name := model + "/" + rel
	v.mu.Lock()
	c, ok := v.trees[name]
	if ok && time.Since(c.at) < v.ttl {
		v.mu.Unlock()
		return nil, c.gone
	}
	v.mu.Unlock()
	type result struct {
		dropped []format.Key
		gone    bool
	}
	r, _, _ := v.flights.Do("\x00tree\x00"+name, func() (any, error) {
		now := time.Now()
		before := t.treeDirKeys(model, rel, false)
		var ents []shardEntry
		err := t.do("scan", func() error {
			var err error
			ents, _, err = listTreeDir(t.fs, model, rel)
			return err
		}, nil)
		var res result
		adopted := 0
		switch {
		case err != nil && !GoneErr(err) && !errors.Is(err, unix.ENOTDIR):
			return res, nil // the directory fails: keep what we know
		case err != nil:
			res.gone = true
			res.dropped = t.dropKeys(t.treeDirKeys(model, rel, true))
		default:
			dir := model
			if rel != "" {
				dir += "/" + rel
			}
			t.removeForeignTemps(dir, ents)
			listed := make(map[format.Key]shardEntry, len(ents))
			for _, e := range ents {
				if e.class == fileEntry {
					listed[format.FileKey(model, format.JoinFilePath(rel, e.name))] = e
				}
			}
			var missing []format.Key
			for _, k := range before {
				if _, ok := listed[k]; !ok {
					missing = append(missing, k)
				}
			}
			res.dropped = t.dropKeys(missing)
			for k, e := range listed {
				if !t.idx.Has(k) {
					t.adoptFound(tier.NewEntry(tier.Info{Key: k, Size: e.size, MTime: time.Unix(e.mtime.Unix())}))
					adopted++
				}
			}
		}
		if len(res.dropped) > 0 || adopted > 0 || res.gone != (ok && c.gone) {
			t.forgetTreeChecks(model) // changed: the model's other directories may have too
		}
		v.mu.Lock()
		if v.trees == nil || len(v.trees) >= treeChecksMax {
			v.trees = make(map[string]treeCheck)
		}
		if cur := v.trees[name]; !cur.made.Before(now) {
			// This host made the directory while the listing ran: what
			// the listing says of it is older than the mkdir.
			res.gone = false
			v.trees[name] = treeCheck{at: cur.made, made: cur.made}
		} else {
			v.trees[name] = treeCheck{at: now, gone: res.gone}
		}
		v.mu.Unlock()
		return res, nil
	})
	res, _ := r.(result)
	return res.dropped, res.gone
}

// treeDirKeys returns the Files the index holds in the directory rel of
// model's tree, and beneath it too with deep (a walk of the model's
// index: for a directory gone, which is rare).
func (t *sharedDir) treeDirKeys(model, rel string, deep bool) []format.Key {
	var keys []format.Key
	if !deep {
		for _, k := range t.idx.ShardKeys(model, format.FileShard(rel), nil) {
			if registry.Of(k).Tree() && k.ShardDir() == rel {
				keys = append(keys, k)
			}
		}
		return keys
	}
	t.idx.Each(model, func(e *index.Entry) bool {
		k := e.Key()
		if registry.Of(k).Tree() && (rel == "" || k.ShardDir() == rel || strings.HasPrefix(k.Name, rel+"/")) {
			keys = append(keys, k)
		}
		return true
	})
	return keys
}

// dropKeys removes keys from the index and tells the stack (view.gone):
// the keys it removed.
func (t *sharedDir) dropKeys(keys []format.Key) []format.Key {
	var out []format.Key
	for _, k := range keys {
		if _, ok := t.idx.Remove(k); ok {
			out = append(out, k)
		}
	}
	if len(out) > 0 && t.view.gone != nil {
		t.view.gone(out)
	}
	return out
}

// forgetTreeChecks makes the next listing of every directory of model's
// tree check it on the share.
func (t *sharedDir) forgetTreeChecks(model string) {
	v := &t.view
	v.mu.Lock()
	for name := range v.trees {
		if strings.HasPrefix(name, model+"/") {
			delete(v.trees, name)
		}
	}
	v.mu.Unlock()
}

// madeTreeDir records that this host made the directory rel of model's
// tree (and so its parents) on the share: a check of any of them made
// before (a TTL's cached answer) or still listing says nothing of it.
// Before, a directory this host had just made could be taken for gone
// on the strength of a check from before its mkdir, and forgotten with
// the store's tree: the engine's next mkdir beneath it (llm-d's
// makedirs) was ENOENT.
func (t *sharedDir) madeTreeDir(model, rel string) {
	now := time.Now()
	v := &t.view
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.trees == nil || len(v.trees) >= treeChecksMax {
		v.trees = make(map[string]treeCheck)
	}
	for {
		v.trees[model+"/"+rel] = treeCheck{at: now, made: now}
		if rel == "" {
			return
		}
		rel = path.Dir(rel)
		if rel == "." {
			rel = ""
		}
	}
}
