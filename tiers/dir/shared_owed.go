package dir

import (
	"sync"

	"github.com/ucmfs/ucmfs/format"
)

// What a host owes a shared tier. While the shared tier is down (its
// filesystem stalled, a storage daemon or its client gone), write-back
// goes to the private tier in front of it, so the host keeps what it
// published; but the other hosts are promised every publish on the share.
// Each file written back so is owed to the share, and so is each file
// published on the private tier itself (an O_DIRECT file staged on the
// nvme: vLLM's and LMCache's stores; it never passed through memory, so
// write-back never saw it, and no other host ever found it): once the share is up
// again, the files owed are copied to it from the private tier, each
// second (the demotion loop's tick), and a flush that covers one copies it
// at once or fails while the share is still down. (Before, such a file
// reached the share only when the private tier evicted it: a block
// published during an outage of a minute was never seen by another host,
// and a flush after the outage answered "ok flushed" for it.)
//
// The set lives in memory, and each file of it is marked on its private
// tier (tiers/owed_marks.go): a daemon restarted before the share came
// back owes them again.

// owedSet is the set of keys a host owes one shared tier.
type owedSet struct {
	mu   sync.Mutex
	keys map[format.Key]struct{}
}

// add records k as owed.
func (o *owedSet) add(k format.Key) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.keys == nil {
		o.keys = make(map[format.Key]struct{})
	}
	o.keys[k] = struct{}{}
}

// done forgets k: it is on the share, or no longer anywhere to copy from.
func (o *owedSet) done(k format.Key) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.keys, k)
}

// has reports whether k is owed.
func (o *owedSet) has(k format.Key) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	_, ok := o.keys[k]
	return ok
}

// list is the keys owed that keep says to take (nil: all).
func (o *owedSet) list(keep func(format.Key) bool) []format.Key {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []format.Key
	for k := range o.keys {
		if keep == nil || keep(k) {
			out = append(out, k)
		}
	}
	return out
}
