package tiers

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/ucmfs/ucmfs/format"
)

// Listings that never miss a name being given a new version
//
// A new version of a name takes the published one's place under the
// key's stripe lock: supersedeLocked takes the old one out of the
// indexes, then the commit adds the new one (a tmpfs rename, a few µs,
// or a directory tier's write). A listing reads the indexes without that
// lock, and one read between the two left the name out: a process that
// rewrote a file (O_TRUNC, or a rename over it) and listed its directory
// right after did not find it (a random sequence of operations compared
// with a plain directory found it; on a local disk a rename over a name
// is atomic for readdir too).
//
// So the replacements of each shard (a files model's directory is one)
// are recorded as they begin, and a listing of a shard that one may have
// crossed asks the stack (Has, which waits on the key's lock) about the
// names replaced meanwhile that it did not find, and adds those it
// holds. Nothing else pays: a publish of a new name, and a listing while
// no replacement runs in its shard, cost two atomic loads.

// replaceLog is how many replacements a shard remembers; a listing that
// more began during reads the shard again.
const replaceLog = 64

// replaceWatch records the replacements of each shard byte.
type replaceWatch struct {
	shards [256]shardReplaces
}

// shardReplaces are one shard's replacements: how many began, how many
// run, and the keys of the last replaceLog to begin.
type shardReplaces struct {
	begun   atomic.Uint64
	running atomic.Int64

	mu      sync.Mutex
	log     [replaceLog]format.Key // key of replacement n at n % replaceLog
	current map[format.Key]int     // the keys being replaced
}

// begin records a replacement of k starting: call it before k leaves the
// indexes, and end once its new version is in them (or it failed).
func (w *replaceWatch) begin(k format.Key) {
	r := &w.shards[k.ID[0]]
	r.mu.Lock()
	if r.current == nil {
		r.current = make(map[format.Key]int)
	}
	r.current[k]++
	r.log[r.begun.Load()%replaceLog] = k
	r.running.Add(1)
	r.begun.Add(1)
	r.mu.Unlock()
}

// end records a replacement of k ended.
func (w *replaceWatch) end(k format.Key) {
	r := &w.shards[k.ID[0]]
	r.mu.Lock()
	if r.current[k]--; r.current[k] <= 0 {
		delete(r.current, k)
	}
	r.running.Add(-1)
	r.mu.Unlock()
}

// mark is what a listing of shard notes before it reads the indexes: the
// replacements begun so far, and the keys being replaced (nil while
// none is).
func (w *replaceWatch) mark(shard byte) (begun uint64, running []format.Key) {
	r := &w.shards[shard]
	begun = r.begun.Load()
	if r.running.Load() == 0 {
		return begun, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	begun = r.begun.Load()
	for k := range r.current {
		running = append(running, k)
	}
	return begun, running
}

// since returns the keys replaced in shard from mark's begun on, with
// running; ok is false when more began than the log keeps.
func (w *replaceWatch) since(shard byte, begun uint64, running []format.Key) (keys []format.Key, ok bool) {
	r := &w.shards[shard]
	if r.begun.Load() == begun {
		return running, true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.begun.Load()
	if now-begun > replaceLog {
		return nil, false
	}
	keys = running
	for n := begun; n < now; n++ {
		keys = append(keys, r.log[n%replaceLog])
	}
	return keys, true
}

// listAttempts is how many times a listing reads a shard's indexes while
// more replacements than replaceLog cross it; the last reading stands.
const listAttempts = 4

// addReplaced appends to keys (a listing of model's shard, from start on)
// the keys replaced during it that it left out and that the stack holds.
func (s *Stack) addReplaced(model string, keys []format.Key, start int, replaced []format.Key) []format.Key {
	for _, k := range replaced {
		if k.Model != model || slices.Contains(keys[start:], k) || !s.Has(k) {
			continue
		}
		keys = append(keys, k)
	}
	return keys
}
