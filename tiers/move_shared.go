package tiers

import (
	"errors"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/tiers/index"
)

// What a shared tier is for. A stack with a shared tier (nfs, ds3fs)
// behind private ones (nvme) is one host of many over one cache: every
// file it publishes is for the other hosts too. So write-back goes to the
// shared tier first, whatever private tier stands in front of it (before,
// it went to the first tier that took it: the nvme, and the share saw a
// file only when the nvme overflowed, so no other host ever found it);
// the private tier in front gets a copy at the same time, a cache of the
// share that lookups and reads find first. The bound on when a published
// file is on the share is the write-back's: --dirty-expire (3 s; 0 when
// the share is the first tier) plus the copy.
//
// While the shared tier is down, write-back goes to the private tiers as
// before; such a file reaches the share when the private tier moves it
// down (eviction). A private copy of a file the share no longer holds (an
// unlink or an eviction by another host) is dropped with the memory copy
// (dropGone): it was a cache of it.

// writeBackOrder is the order write-back tries the directory tiers in:
// the shared ones first, then the others, each in stack order.
func (s *Stack) writeBackOrder() []int {
	order := make([]int, 0, len(s.dirs))
	for i, d := range s.dirs {
		if d.Shared() {
			order = append(order, i)
		}
	}
	for i, d := range s.dirs {
		if !d.Shared() {
			order = append(order, i)
		}
	}
	return order
}

// cacheCopy copies k, just written back from memory to the shared tier
// dirs[shared], to the first private tier in front of it that is up: the
// host's cache of the share. It is best effort: a copy that fails (the
// tier full, down, the version replaced meanwhile) leaves the file on the
// share only, where reads find it.
func (s *Stack) cacheCopy(k format.Key, shared int, from *index.Entry) {
	for i := 0; i < shared; i++ {
		d := s.dirs[i]
		if d.Shared() || d.Health() == Down {
			continue
		}
		if info, err := s.mem.Stat(k); err != nil || d.FSNeed(info.Size) > 0 {
			return // gone from memory, or no room without evicting for a cache
		}
		w, opts, err := s.copyOut(s.mem, d, k)
		if err != nil {
			return
		}
		if opts.From != from {
			w.Abort() // another version: it gets its own write-back
			return
		}
		if err := s.commitCopy(s.mem, w, opts, k, func() error { return nil }); err != nil && !errors.Is(err, ErrNotFound) {
			s.log.Debug("cache copy of a shared file not kept", "key", k.String(), "tier", d.Name(), "err", err)
		}
		return
	}
}
