package fs

import (
	"cmp"
	"errors"
	"fmt"
	"sync"
)

// An open directory of a files model or a shard holds its listing from
// its first read to its release (files_list.go, light.Layer's snapshot),
// so that offsets stay valid while the directory changes. Any user may
// open a directory as often as its descriptor limit lets it: 2,000
// descriptors of one 20,000-name directory, each read once, took 2 GB of
// the daemon. So what the listings of open directories hold is bounded
// like the other things a user makes:
//
//   - maxListed names in all and maxListedPerUser for one user's open
//     directories, root included; a listing is charged to the user who
//     took it, and given back when it is taken anew (a rewind) or its
//     directory is released;
//   - a listing past the bound is not taken: the read fails with EMFILE
//     past the user's share ("too many open files": what the user holds
//     open), ENFILE past the bound.
//
// 4M names are ~200 MB of the daemon; one user may list a directory of
// 10^6 names four times at once.
const (
	maxListed        = 1 << 24 // names held by open directories' listings, every user together
	maxListedPerUser = 1 << 22 // what one user's open directories may hold of them
)

// Errors of the listing budget, mapped to errno in errno.go.
var (
	errListingsUser = errors.New("the listings of the user's open directories are at their bound")
	errListingsFull = errors.New("the listings of open directories are at their bound")
)

// listingBudget counts the names the listings of open directories hold,
// by user.
type listingBudget struct {
	mu    sync.Mutex
	total int64
	users map[uint32]int64
	// max and perUser are the bounds (0: maxListed, maxListedPerUser).
	max, perUser int64
}

// hold charges uid n names, or refuses them.
func (b *listingBudget) hold(uid uint32, n int) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.users == nil {
		b.users = make(map[uint32]int64)
	}
	c := int64(n)
	max, perUser := cmp.Or(b.max, maxListed), cmp.Or(b.perUser, maxListedPerUser)
	if b.users[uid]+c > perUser {
		return fmt.Errorf("%d names held, %d more: %w", b.users[uid], n, errListingsUser)
	}
	if b.total+c > max {
		return fmt.Errorf("%d names held, %d more: %w", b.total, n, errListingsFull)
	}
	b.users[uid] += c
	b.total += c
	return nil
}

// free gives back n names uid held.
func (b *listingBudget) free(uid uint32, n int) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.total -= int64(n)
	if b.users[uid] -= int64(n); b.users[uid] <= 0 {
		delete(b.users, uid)
	}
}
