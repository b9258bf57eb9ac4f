package store

import (
	"sync"

	"github.com/ucmfs/ucmfs/format"
)

// writeKey names a file being written in the table: its shard directory
// and name, and who sees it (the creating thread group for a final name,
// the creating user for a staging name).
type writeKey struct {
	model   string
	shard   string // the shard directory's name
	name    string
	staging bool
	who     uint32 // tgid, or uid for a staging name
}

// writeKeyOf is the table key of name in key's shard as p sees it.
func writeKeyOf(key format.Key, name string, staging bool, p Proc) writeKey {
	who := p.Tgid
	if staging {
		who = p.Uid
	}
	return writeKey{model: key.Model, shard: key.ShardDir(), name: name, staging: staging, who: who}
}

// writeName is a name in a shard directory.
type writeName struct {
	model, shard, name string
}

// writeTable holds the files being written that a name reaches. Its mutex
// is a leaf. names counts the entries of each name, whoever sees them, so
// a lookup of a name nobody writes costs no look at the caller.
type writeTable struct {
	mu       sync.Mutex
	m        map[writeKey]*Draft
	names    map[writeName]int
	stagings int // staging entries
}

func (t *writeTable) get(k writeKey) *Draft {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.m[k]
}

// put adds w under k unless k is taken; it returns the entry under k.
func (t *writeTable) put(k writeKey, w *Draft) *Draft {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.putLocked(k, w)
}

// putLocked is put under t.mu.
func (t *writeTable) putLocked(k writeKey, w *Draft) *Draft {
	if t.m == nil {
		t.m = make(map[writeKey]*Draft)
		t.names = make(map[writeName]int)
	}
	if old := t.m[k]; old != nil {
		return old
	}
	t.m[k] = w
	t.names[writeName{k.model, k.shard, k.name}]++
	if k.staging {
		t.stagings++
	}
	return w
}

// putExcl adds w under k unless anyone writes k's name (whoever sees
// it): an O_EXCL create, which is exclusive across processes and users,
// as on a local disk (a lock file made with O_CREAT|O_EXCL).
func (t *writeTable) putExcl(k writeKey, w *Draft) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.names[writeName{k.model, k.shard, k.name}] > 0 {
		return false
	}
	return t.putLocked(k, w) == w
}

// replace puts w under k in place of what k held, and returns that (nil
// when k was free).
func (t *writeTable) replace(k writeKey, w *Draft) *Draft {
	t.mu.Lock()
	defer t.mu.Unlock()
	if old := t.m[k]; old != nil {
		t.m[k] = w
		return old
	}
	t.putLocked(k, w)
	return nil
}

// drop removes k if it still holds w.
func (t *writeTable) drop(k writeKey, w *Draft) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m[k] != w {
		return
	}
	delete(t.m, k)
	n := writeName{k.model, k.shard, k.name}
	if t.names[n]--; t.names[n] <= 0 {
		delete(t.names, n)
	}
	if k.staging {
		t.stagings--
	}
}

// Named reports whether anyone writes name in model's shard
// directory shard.
func (ws Writes) Named(model, shard, name string) bool {
	t := &ws.s.writes
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.names[writeName{model, shard, name}] > 0
}

// Staging returns the staging file name (standing for key) that
// user uid sees, or nil.
func (ws Writes) Staging(key format.Key, name string, uid uint32) *Draft {
	return ws.s.writes.get(writeKeyOf(key, name, true, Proc{Uid: uid}))
}

// Owned returns the files process tgid writes under their final names
// in model's shard directory shard (a directory of a files model).
func (ws Writes) Owned(model, shard string, tgid uint32) []*Draft {
	return ws.s.writes.collect(model, shard, func(k writeKey) bool { return !k.staging && k.who == tgid },
		func(t *writeTable) bool { return len(t.m) > t.stagings })
}

// StagingIn returns the staging files of model's shard directory that
// user uid sees.
func (ws Writes) StagingIn(model, shard string, uid uint32) []*Draft {
	return ws.s.writes.collect(model, shard, func(k writeKey) bool { return k.staging && k.who == uid },
		func(t *writeTable) bool { return t.stagings > 0 })
}

// inShardDrafts returns the files being written in model's shard
// directory shard, whoever sees them.
func (t *writeTable) inShardDrafts(model, shard string) []*Draft {
	return t.collect(model, shard, func(writeKey) bool { return true }, func(*writeTable) bool { return true })
}

// collect returns the files being written in model's shard directory
// shard whose entries keep says to, when any says there may be some
// (a count of the table, under mu, that spares the walk).
func (t *writeTable) collect(model, shard string, keep func(writeKey) bool, any func(*writeTable) bool) []*Draft {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !any(t) {
		return nil
	}
	var out []*Draft
	for k, w := range t.m {
		if k.model == model && k.shard == shard && keep(k) {
			out = append(out, w)
		}
	}
	return out
}

// inShard reports whether anyone writes a file in model's shard
// directory shard (a directory of a files model).
func (t *writeTable) inShard(model, shard string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for n := range t.names {
		if n.model == model && n.shard == shard {
			return true
		}
	}
	return false
}

// counts returns how many files are being written, and how many of them
// under a staging name.
func (t *writeTable) counts() (writing, staging int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return int64(len(t.m)), int64(t.stagings)
}

// InShard reports whether anyone writes a file in model's shard
// directory shard (its name, as the front end shows it).
func (ws Writes) InShard(model, shard string) bool { return ws.s.writes.inShard(model, shard) }
